//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package httpengine

import "net"

// alive cannot peek here: an idle connection the engine closed shows as a failed leg.
func alive(net.Conn) bool { return true }
