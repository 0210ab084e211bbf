package registry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/worker"
)

// CodeWorkerLimitReached (409, worker-API shape) refuses a registration while --max-workers
// workers are registered.
const CodeWorkerLimitReached = "WORKER_LIMIT_REACHED"

// blockedNets are the addresses a worker may not live on unless --worker-allowed-hosts lists
// them: IPv4 and IPv6 link-local (169.254.0.0/16 holds the AWS, GCP, Azure and OCI instance
// metadata services at 169.254.169.254) and AWS's IPv6 metadata endpoint fd00:ec2::254. A
// registration probe carries the worker's api_key and its answers are reflected in GET
// /workers, so such a URL would let a client read or abuse the gateway host's cloud
// credentials.
var blockedNets = mustCIDRs("169.254.0.0/16", "fe80::/10", "fd00:ec2::254/128")

// resolveTimeout bounds the DNS look-up of a worker host name at registration.
const resolveTimeout = 2 * time.Second

func mustCIDRs(cidrs ...string) []*net.IPNet {
	out := make([]*net.IPNet, 0, len(cidrs))
	for _, c := range cidrs {
		_, n, err := net.ParseCIDR(c)
		if err != nil {
			panic(err)
		}
		out = append(out, n)
	}
	return out
}

// hostPolicy decides which worker hosts may be registered (--worker-allowed-hosts).
type hostPolicy struct {
	restrict bool            // an allow-list is configured: only listed hosts pass
	names    map[string]bool // listed host names, lower case, no trailing dot
	nets     []*net.IPNet    // listed CIDRs and single addresses
	lookup   func(ctx context.Context, host string) ([]net.IP, error)
}

// newHostPolicy builds the policy from --worker-allowed-hosts entries (host names, IP
// addresses, CIDRs; config.Validate has checked them). lookup nil uses the system resolver.
func newHostPolicy(allowed []string, lookup func(ctx context.Context, host string) ([]net.IP, error)) hostPolicy {
	p := hostPolicy{restrict: len(allowed) > 0, names: map[string]bool{}, lookup: lookup}
	if p.lookup == nil {
		p.lookup = func(ctx context.Context, host string) ([]net.IP, error) {
			return net.DefaultResolver.LookupIP(ctx, "ip", host)
		}
	}
	for _, a := range allowed {
		a = strings.TrimSpace(a)
		if _, n, err := net.ParseCIDR(a); err == nil {
			p.nets = append(p.nets, n)
			continue
		}
		if ip := net.ParseIP(a); ip != nil {
			bits := 128
			if ip.To4() != nil {
				ip, bits = ip.To4(), 32
			}
			p.nets = append(p.nets, &net.IPNet{IP: ip, Mask: net.CIDRMask(bits, bits)})
			continue
		}
		p.names[normHost(a)] = true
	}
	return p
}

func normHost(h string) string { return strings.TrimSuffix(strings.ToLower(h), ".") }

func (p hostPolicy) listed(ip net.IP) bool {
	for _, n := range p.nets {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

func blocked(ip net.IP) bool {
	for _, n := range blockedNets {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

// check refuses (400 BAD_REQUEST) a worker URL whose host is, or resolves to, a blocked
// address not covered by the allow-list, or — with an allow-list — a host it does not list
// by name or address. ipc:// workers have no host. A host name the allow-list names passes
// without a look-up; one that does not resolve passes only without an allow-list (it cannot
// be dialed anyway, and the registry's client refuses blocked addresses when it dials).
// resolve false skips the look-up: a name passes unless an allow-list does not name it.
func (p hostPolicy) check(ctx context.Context, w worker.Worker, resolve bool) error {
	if w.Mode == worker.ConnZMQ {
		return nil
	}
	u, err := url.Parse(w.BaseURL())
	if err != nil || u.Hostname() == "" {
		return nil // worker.ValidateURL already refused it
	}
	host := u.Hostname()
	shown := w.DisplayURL()
	var ips []net.IP
	literal, _, _ := strings.Cut(host, "%") // an IPv6 zone (fe80::1%eth0) is not part of the address
	if ip := net.ParseIP(literal); ip != nil {
		ips = []net.IP{ip}
	} else {
		if p.names[normHost(host)] {
			return nil
		}
		if !resolve {
			if p.restrict {
				return badRequest("Worker %s is not allowed: host %s is not in --worker-allowed-hosts", shown, host)
			}
			return nil
		}
		lctx, cancel := context.WithTimeout(ctx, resolveTimeout)
		ips, err = p.lookup(lctx, host)
		cancel()
		if err != nil || len(ips) == 0 {
			if p.restrict {
				return badRequest("Worker %s is not allowed: host %s is not in --worker-allowed-hosts (and does not resolve to a listed address)", shown, host)
			}
			return nil
		}
	}
	for _, ip := range ips {
		if v4 := ip.To4(); v4 != nil {
			ip = v4
		}
		if p.listed(ip) {
			continue
		}
		if blocked(ip) {
			return badRequest("Worker %s is not allowed: %s is a link-local or cloud metadata address (169.254.0.0/16, fe80::/10, fd00:ec2::254); list it in --worker-allowed-hosts to register it", shown, ip)
		}
		if p.restrict {
			return badRequest("Worker %s is not allowed: host %s (%s) is not in --worker-allowed-hosts", shown, host, ip)
		}
	}
	return nil
}

// errBlockedDial is returned when the registry's client is about to connect to a blocked
// address (a host name that resolved elsewhere at registration, DNS rebinding).
var errBlockedDial = errors.New("refusing to dial a link-local or cloud metadata address not in --worker-allowed-hosts")

// guardDialer makes t refuse connections to blocked addresses the allow-list does not
// cover, checked on the address actually dialed.
func (p hostPolicy) guardDialer(t *http.Transport) {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second,
		Control: func(_, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return nil
			}
			ip := net.ParseIP(host)
			if ip == nil {
				return nil
			}
			if v4 := ip.To4(); v4 != nil {
				ip = v4
			}
			if blocked(ip) && !p.listed(ip) {
				return fmt.Errorf("%w: %s", errBlockedDial, ip)
			}
			return nil
		}}
	t.DialContext = d.DialContext
}

// probeSlots bounds the registration probes (first health probe, detection calls) in
// flight at once across all registrations (--registration-probe-concurrency), so a burst of
// POST /workers cannot turn the gateway into a request amplifier.
type probeSlots chan struct{}

// acquire waits for a slot or ctx; release with the returned func.
func (s probeSlots) acquire(ctx context.Context) (func(), error) {
	select {
	case s <- struct{}{}:
		return func() { <-s }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// checkCap refuses a registration while --max-workers workers are registered (0: no cap).
// Called with s.mu held.
func (s *Service) checkCap() error {
	if s.cfg.MaxWorkers <= 0 {
		return nil
	}
	if n := len(s.store.List()); n >= s.cfg.MaxWorkers {
		return errs.New(http.StatusConflict, CodeWorkerLimitReached,
			"Worker limit reached: %d workers are registered (--max-workers %d). DELETE one first.", n, s.cfg.MaxWorkers)
	}
	return nil
}
