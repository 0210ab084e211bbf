//go:build linux || darwin || freebsd || netbsd || openbsd

package httpengine

import (
	"net"
	"syscall"
)

// alive reports whether an idle pooled connection can carry another request: a
// non-blocking peek finds nothing to read (EAGAIN). End of stream (the engine closed its
// side, as uvicorn does after its keep-alive timeout), unsolicited bytes or an error mean
// it cannot. net/http learns the same from a reader goroutine per connection; this is one
// cheap syscall per reuse instead.
func alive(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	ok = false
	var b [1]byte
	err = rc.Read(func(fd uintptr) bool {
		_, _, e := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		ok = e == syscall.EAGAIN || e == syscall.EWOULDBLOCK
		return true
	})
	return ok && err == nil
}
