package dispatch

import "sync"

// relayBufs recycles the streaming relay's read buffers (relayBufSize bytes each): a stream
// takes one for its lifetime and returns it at the end, so steady streaming allocates no
// buffer per request and an idle gateway holds none.
var relayBufs = sync.Pool{New: func() any {
	b := make([]byte, relayBufSize)
	return &b
}}

// getRelayBuf returns a relayBufSize buffer; give it back with putRelayBuf once no slice
// of it is referenced any more.
func getRelayBuf() *[]byte { return relayBufs.Get().(*[]byte) }

func putRelayBuf(b *[]byte) { relayBufs.Put(b) }
