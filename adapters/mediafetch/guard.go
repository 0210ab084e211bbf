package mediafetch

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"
	"time"
)

// errBlockedAddress is returned when a media URL leads (directly, through DNS or through a
// redirect) to an address a client must never make the gateway fetch from.
var errBlockedAddress = errors.New("media URLs may not point at link-local, cloud metadata or unspecified addresses")

// blockedMediaNets are refused for every media fetch: IPv4 and IPv6 link-local
// (169.254.169.254 is the AWS, GCP, Azure and OCI instance metadata service), AWS's IPv6
// metadata endpoint fd00:ec2::254 and the unspecified addresses. A client names media URLs,
// so without this any caller could read the gateway host's cloud credentials through an
// image part. The worker registry refuses the same ranges for worker URLs.
var blockedMediaNets = func() []*net.IPNet {
	var out []*net.IPNet
	for _, c := range []string{"169.254.0.0/16", "fe80::/10", "fd00:ec2::254/128", "0.0.0.0/32", "::/128"} {
		_, n, err := net.ParseCIDR(c)
		if err != nil {
			panic(err)
		}
		out = append(out, n)
	}
	return out
}()

func blockedMediaIP(ip net.IP) bool {
	if v4 := ip.To4(); v4 != nil {
		ip = v4
	}
	for _, n := range blockedMediaNets {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

// guardedTransport is an HTTP transport whose dialer refuses blocked addresses, checked on
// the address actually dialed (after DNS, on every redirect), so DNS rebinding cannot pass.
func guardedTransport(timeout time.Duration) *http.Transport {
	d := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second,
		Control: func(_, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return fmt.Errorf("%w: %s", errBlockedAddress, address)
			}
			if ip := net.ParseIP(host); ip != nil && blockedMediaIP(ip) {
				return fmt.Errorf("%w: %s", errBlockedAddress, ip)
			}
			return nil
		}}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil // a proxy would dial on our behalf, past the guard
	t.DialContext = d.DialContext
	return t
}
