package tenants

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/smg-go/smg/adapters/httpauth"
	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/tenant"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/ports"
)

// DefaultPoll is how often the tenants file is read for changes. Polling the content (not
// inotify) also sees a Kubernetes ConfigMap update, which swaps a symlink.
const DefaultPoll = time.Second

// Options configure a Resolver.
type Options struct {
	// File is --tenants-file ("" = none: every request is the anonymous tenant, or the
	// --tenant-header's).
	File string
	// Header is --tenant-header: a trusted header (set by an authenticating proxy) whose
	// value names the request's tenant. With a tenants file it must name a listed tenant;
	// without one it names a tenant with no limits and priority 0. "" = none.
	Header string
	// APIKey is --api-key: its holder passes as the anonymous tenant ("" = none).
	APIKey string
	// Poll is how often File is re-read (DefaultPoll when 0).
	Poll time.Duration
	// Logger receives reload reports (slog.Default when nil).
	Logger *slog.Logger
	// OnChange, when set, is called with every directory that comes into force (at New
	// and after each good reload).
	OnChange func(*Directory)
}

// Resolver is the ports.TenantResolver of the data plane. The tenants in force are swapped
// atomically on reload; a bad file leaves them in place.
type Resolver struct {
	o    Options
	key  httpauth.Key
	dir  atomic.Pointer[Directory]
	last []byte // file content last tried (guarded by mu)
	mu   sync.Mutex
	stop chan struct{}
	done chan struct{}
}

// New reads the tenants file (when set) and returns the Resolver. A bad file is an error
// naming the flag, the file and the line at fault.
func New(o Options) (*Resolver, error) {
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	r := &Resolver{o: o, key: httpauth.NewKey(o.APIKey)}
	r.dir.Store(newDirectory())
	if o.File != "" {
		b, err := os.ReadFile(o.File)
		if err != nil {
			return nil, fmt.Errorf("--tenants-file: %w", err)
		}
		if _, err := r.apply(b); err != nil {
			return nil, err
		}
	} else if o.OnChange != nil {
		o.OnChange(r.dir.Load())
	}
	return r, nil
}

// Directory returns the tenants in force.
func (r *Resolver) Directory() *Directory { return r.dir.Load() }

// Reload re-reads the tenants file now. A file that cannot be read or parsed changes
// nothing and is returned as an error naming the flag, the file and the line. changed
// reports whether a new directory came into force (false when the content is unchanged).
func (r *Resolver) Reload() (changed bool, err error) {
	if r.o.File == "" {
		return false, nil
	}
	b, err := os.ReadFile(r.o.File)
	if err != nil {
		return false, fmt.Errorf("--tenants-file: %w", err)
	}
	return r.apply(b)
}

func (r *Resolver) apply(b []byte) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last != nil && bytes.Equal(b, r.last) {
		return false, nil
	}
	r.last = b // a bad file is reported once per change, not on every poll
	d, err := Parse(b)
	if err != nil {
		return false, fmt.Errorf("invalid --tenants-file %s: %w", r.o.File, err)
	}
	r.dir.Store(d)
	if r.o.OnChange != nil {
		r.o.OnChange(d)
	}
	return true, nil
}

// Start polls the tenants file every Options.Poll until Close, logging each reload (the
// tenant and key counts, never a key) and each bad file (with its line; the tenants in
// force stay). Without a file it does nothing.
func (r *Resolver) Start() {
	if r.o.File == "" || r.stop != nil {
		return
	}
	r.stop, r.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(r.done)
		t := time.NewTicker(r.o.Poll)
		defer t.Stop()
		for {
			select {
			case <-r.stop:
				return
			case <-t.C:
			}
			changed, err := r.Reload()
			switch {
			case err != nil:
				r.o.Logger.Error("tenants file not applied; keeping the tenants in force", "file", r.o.File, "error", err.Error())
			case changed:
				d := r.dir.Load()
				r.o.Logger.Info("tenants file reloaded", "file", r.o.File, "tenants", d.Len(), "keys", d.Keys())
			}
		}
	}()
}

// Close stops the polling started by Start.
func (r *Resolver) Close() {
	if r.stop != nil {
		close(r.stop)
		<-r.done
		r.stop = nil
	}
}

// AuthRequired implements ports.TenantResolver: --api-key is set or a tenant holds a key.
func (r *Resolver) AuthRequired() bool { return r.key.Enabled() || r.dir.Load().Keys() > 0 }

// Resolve implements ports.TenantResolver. When keys are required, the Bearer token must be
// --api-key (the anonymous tenant) or a tenant's key (that tenant). Then a non-empty
// --tenant-header value, when configured, names the tenant (overriding the key's): with a
// tenants file it must be a listed tenant, without one any valid name (no limits).
func (r *Resolver) Resolve(h http.Header) (tenant.Tenant, bool, *errs.Error) {
	d := r.dir.Load()
	var t tenant.Tenant
	named := false
	if r.key.Enabled() || d.Keys() > 0 {
		authz := h.Get("Authorization")
		switch {
		case r.key.Enabled() && r.key.Allows(authz):
		default:
			scheme, token, ok := strings.Cut(strings.TrimSpace(authz), " ")
			if ok && strings.EqualFold(scheme, "Bearer") {
				t, named = d.ByKey(strings.TrimSpace(token))
			}
			if !named {
				return tenant.Tenant{}, false, errs.New(http.StatusUnauthorized, wire.CodeInvalidAPIKey,
					"Missing or invalid API key: send the gateway's --api-key or your tenant's key as 'Authorization: Bearer <key>'")
			}
		}
	}
	if r.o.Header == "" {
		return t, named, nil
	}
	v := strings.TrimSpace(h.Get(r.o.Header))
	if v == "" {
		return t, named, nil
	}
	if !ValidName(v) {
		return tenant.Tenant{}, false, errs.New(http.StatusUnauthorized, wire.CodeInvalidAPIKey,
			"invalid %s header: a tenant name is 1 to 64 letters, digits, '.', '_' or '-'", http.CanonicalHeaderKey(r.o.Header))
	}
	if r.o.File == "" {
		return tenant.Tenant{Name: v}, true, nil
	}
	ht, ok := d.ByName(v)
	if !ok {
		return tenant.Tenant{}, false, errs.New(http.StatusUnauthorized, wire.CodeInvalidAPIKey,
			"%s header names no tenant of the gateway's --tenants-file", http.CanonicalHeaderKey(r.o.Header))
	}
	return ht, true, nil
}

var _ ports.TenantResolver = (*Resolver)(nil)
