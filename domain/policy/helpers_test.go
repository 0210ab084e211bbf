package policy_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/worker"
)

// workers returns n ready workers at distinct loopback URLs serving model "m".
func workers(n int) []*worker.Live {
	out := make([]*worker.Live, n)
	for i := range out {
		out[i] = worker.NewLive(worker.Worker{
			ID:     fmt.Sprintf("w%d", i),
			URL:    fmt.Sprintf("http://127.0.0.1:%d", 8000+i),
			Role:   worker.RolePrefill,
			Models: []string{"m"},
		}, worker.StatusReady)
	}
	return out
}

// setLoad acquires n in-flight requests on w (never released: test workers are throwaway).
func setLoad(w *worker.Live, n int) {
	for range n {
		w.Acquire()
	}
}

func mustNew(t interface{ Fatalf(string, ...any) }, name string, leg policy.Leg, o policy.Options) policy.Policy {
	p, err := policy.New(name, leg, o)
	if err != nil {
		t.Fatalf("New(%q, %s): %v", name, leg, err)
	}
	return p
}

// fakeStore is an in-memory policy.StickyStore that records TTLs and can be made to fail.
type fakeStore struct {
	mu   sync.Mutex
	m    map[string]string
	ttls map[string]time.Duration
	fail error // returned by every call when set
	gets int
}

func newFakeStore() *fakeStore {
	return &fakeStore{m: map[string]string{}, ttls: map[string]time.Duration{}}
}

var errStoreDown = errors.New("store down")

func (s *fakeStore) Get(ctx context.Context, key string) (string, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gets++
	if s.fail != nil {
		return "", false, s.fail
	}
	if err := ctx.Err(); err != nil {
		return "", false, err
	}
	w, ok := s.m[key]
	return w, ok, nil
}

func (s *fakeStore) Set(ctx context.Context, key, w string, ttl time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.m[key], s.ttls[key] = w, ttl
	return nil
}

func (s *fakeStore) Delete(_ context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	delete(s.m, key)
	return nil
}

func (s *fakeStore) setFail(err error) {
	s.mu.Lock()
	s.fail = err
	s.mu.Unlock()
}

func (s *fakeStore) snapshot() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]string, len(s.m))
	for k, v := range s.m {
		out[k] = v
	}
	return out
}

var _ policy.StickyStore = (*fakeStore)(nil)

// recorder is a policy.Observer counting branches and keeping the last tree sizes.
type recorder struct {
	mu       sync.Mutex
	branches map[string]int // "policy/branch" -> count
	trees    map[string]int
}

func newRecorder() *recorder {
	return &recorder{branches: map[string]int{}, trees: map[string]int{}}
}

func (r *recorder) Branch(p, b string) {
	r.mu.Lock()
	r.branches[p+"/"+b]++
	r.mu.Unlock()
}

func (r *recorder) TreeSize(model string, chars int) {
	r.mu.Lock()
	r.trees[model] = chars
	r.mu.Unlock()
}

func (r *recorder) count(p, b string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.branches[p+"/"+b]
}

var _ policy.Observer = (*recorder)(nil)

// counts tallies picks per candidate index.
func counts(n int, picks []int) []int {
	out := make([]int, n)
	for _, i := range picks {
		out[i]++
	}
	return out
}
