//go:build linux || darwin || freebsd || netbsd || openbsd

package httpengine

import (
	"net"
	"syscall"
)

// alive reports whether a pooled connection can carry another request: no FIN or RST from
// the engine (which closes idle connections on its keep-alive timeout or restart) and no
// stray bytes waiting. One non-blocking MSG_PEEK recv, no data consumed.
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
	err = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, rerr := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		// EAGAIN: nothing to read, the connection is idle and open. n == 0: FIN. n > 0:
		// bytes nobody asked for. Any other error: reset or worse.
		ok = n < 0 && (rerr == syscall.EAGAIN || rerr == syscall.EWOULDBLOCK)
		return true // never wait
	})
	return err == nil && ok
}
