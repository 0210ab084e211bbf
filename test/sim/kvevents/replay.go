package kvevents

import "github.com/go-zeromq/zmq4"

// endSeq is the replay end marker: -1 as an 8-byte signed big-endian integer.
var endSeq = seqBytes(-1)

// serveReplay answers replay requests on the ROUTER socket until Close, as vLLM's
// _service_replay does (vllm/distributed/kv_events.py): a request is
// [identity, "", start_seq] with start_seq big-endian; the reply is one message
// [identity, "", seq, payload] per buffered batch with seq >= start_seq, oldest first, then
// [identity, "", -1, ""]. Requests of another shape are ignored. Batches withheld by a
// fault are replayed like any other (the buffer always holds the real payload).
//
// zmq4's ROUTER routes by the identity a peer announces (libzmq generates one for an
// anonymous peer); zmq4's own sockets announce a random one, a libzmq DEALER without
// ZMQ_ROUTING_ID announces none, so two anonymous libzmq clients replaying at once could
// receive each other's replies.
func (p *Publisher) serveReplay() {
	for {
		msg, err := p.router.Recv()
		if err != nil {
			return // the socket's context ended: Close
		}
		if len(msg.Frames) != 3 || len(msg.Frames[2]) > 8 {
			continue
		}
		id := msg.Frames[0]
		var start uint64
		for _, c := range msg.Frames[2] {
			start = start<<8 | uint64(c)
		}
		p.mu.Lock()
		kept := p.buf.from(start)
		p.mu.Unlock()
		for _, x := range kept {
			if err := p.router.Send(zmq4.NewMsgFrom(id, nil, seqBytes(int64(x.b.Seq)), x.payload)); err != nil {
				break
			}
		}
		_ = p.router.Send(zmq4.NewMsgFrom(id, nil, endSeq, nil))
	}
}
