package text

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/wire"
)

// Source is one place a model's tokenizer may be loaded from, with the reason it is tried.
type Source struct {
	// Origin names where the path came from: "--tokenizer-path", "--model-path",
	// "label tokenizer_path", "label model_path".
	Origin string
	// Path is a directory or file (or, if it does not exist, what SMG would take as a hub id).
	Path string
}

// StartupSources is the startup load: --tokenizer-path, falling back to --model-path (SMG's
// server.rs tokenizer job; seed "--model-path, --tokenizer-path").
func StartupSources(tokenizerPath, modelPath string) []Source {
	var out []Source
	add := func(origin, p string) {
		if p != "" {
			out = append(out, Source{Origin: origin, Path: p})
		}
	}
	add("--tokenizer-path", tokenizerPath)
	add("--model-path", modelPath)
	return out
}

// WorkerSources is the order for a gRPC worker's model (submit_tokenizer_job.rs,
// tokenizer_registration.rs): its tokenizer_path label, its model_path label, then
// --tokenizer-path and --model-path. Duplicated paths are tried once. After these the
// Registry asks the model's workers for their GetTokenizer bundle.
func WorkerSources(labels map[string]string, tokenizerPath, modelPath string) []Source {
	var out []Source
	seen := map[string]bool{}
	add := func(origin, p string) {
		if p != "" && !seen[p] {
			seen[p] = true
			out = append(out, Source{Origin: origin, Path: p})
		}
	}
	add("label "+wire.LabelTokenizerPath, labels[wire.LabelTokenizerPath])
	add("label "+wire.LabelModelPath, labels[wire.LabelModelPath])
	add("--tokenizer-path", tokenizerPath)
	add("--model-path", modelPath)
	return out
}

// Registry loads each model's text pipeline once and shares it: concurrent first requests for
// a model wait for one load; a successful load is kept, a failed one is retried by the next
// request, except that a local source that failed to load, or a worker whose GetTokenizer
// bundle failed, is not tried again until its backoff passes (DefaultBundleBackoff, doubling
// to MaxBundleBackoff). Safe for concurrent use.
type Registry struct {
	files   Files
	fetcher BundleFetcher
	opts    LoadOptions
	limits  BundleLimits
	failed  *bundleFailures

	mu     sync.Mutex
	models map[string]*registryEntry
	cache  *EncodeCache // attached to every model's tokenizer (UseCache)
}

type registryEntry struct {
	done  chan struct{}
	model *Model
	err   error
}

// NewRegistry builds a registry over local files and a GetTokenizer fetcher (nil: no
// bundle fallback).
func NewRegistry(files Files, fetcher BundleFetcher, opts LoadOptions) *Registry {
	return &Registry{files: files, fetcher: fetcher, opts: opts, limits: DefaultBundleLimits, models: map[string]*registryEntry{},
		failed: newBundleFailures(DefaultBundleBackoff, MaxBundleBackoff, nil)}
}

// Put installs an already loaded model (the startup load).
func (r *Registry) Put(model string, m *Model) {
	done := make(chan struct{})
	close(done)
	r.mu.Lock()
	r.models[model] = &registryEntry{done: done, model: m}
	r.attach(m)
	r.mu.Unlock()
}

// UseCache attaches c (nil: none) to the tokenizer of every model loaded or put, now and
// later: their Encode calls share it.
func (r *Registry) UseCache(c *EncodeCache) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cache = c
	for _, e := range r.models {
		select {
		case <-e.done:
			r.attach(e.model)
		default: // attached when its load ends
		}
	}
}

// Cache is the cache UseCache attached (nil: none).
func (r *Registry) Cache() *EncodeCache {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cache
}

// attach gives m's tokenizer the registry's cache; r.mu is held.
func (r *Registry) attach(m *Model) {
	if m != nil && m.Tokenizer != nil {
		m.Tokenizer.UseCache(r.cache)
	}
}

// Loaded returns model's pipeline when it is already loaded, without loading or waiting
// (nil while a load runs, after a failed one, or for a model never asked for).
func (r *Registry) Loaded(model string) *Model {
	r.mu.Lock()
	e, ok := r.models[model]
	r.mu.Unlock()
	if !ok {
		return nil
	}
	select {
	case <-e.done:
		return e.model
	default:
		return nil
	}
}

// Get returns model's pipeline, loading it on first use: each source in order, then the
// GetTokenizer bundle of each worker in workers (healthy gRPC workers serving the model) until
// one succeeds. ctx bounds only this caller's wait: a load runs to completion (LoadTimeout)
// for whoever waits on it. A worker without the RPC is skipped. When everything fails the
// error is a 500 tokenizer_not_found *errs.Error whose message lists every attempt.
func (r *Registry) Get(ctx context.Context, model string, sources []Source, workers []string) (*Model, error) {
	r.mu.Lock()
	if e, ok := r.models[model]; ok {
		r.mu.Unlock()
		select {
		case <-e.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return e.model, e.err // waiters of a failed load share its error; the next request retries
	}
	e := &registryEntry{done: make(chan struct{})}
	r.models[model] = e
	r.mu.Unlock()

	// The load outlives the first caller: others may be waiting for it. It keeps the caller's
	// values but not its cancellation, bounded like SMG's registry workflow (300 s).
	loadCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), LoadTimeout)
	go func() {
		defer cancel()
		e.model, e.err = r.load(loadCtx, model, sources, workers)
		r.mu.Lock()
		if e.err != nil {
			if r.models[model] == e {
				delete(r.models, model)
			}
		} else {
			r.attach(e.model)
		}
		close(e.done)
		r.mu.Unlock()
	}()
	select {
	case <-e.done:
		return e.model, e.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// LoadTimeout bounds one model load, GetTokenizer fallbacks included (SMG's registry
// workflow timeout, grpc.md §1.14).
const LoadTimeout = 300 * time.Second

func (r *Registry) load(ctx context.Context, model string, sources []Source, workers []string) (*Model, error) {
	var tried []string
	for _, s := range sources {
		key := "path " + s.Path
		if f, left, ok := r.failed.blocked(key); ok {
			tried = append(tried, fmt.Sprintf("%s %s: %v (not read again for %s)", s.Origin, s.Path, f.err, left.Round(time.Second)))
			continue
		}
		m, err := LoadModel(r.files, s.Path, r.opts)
		if err == nil {
			r.failed.succeed(key)
			return m, nil
		}
		if errors.Is(err, ErrHubID) { // nothing was read
			tried = append(tried, fmt.Sprintf("%s %s: %v", s.Origin, s.Path, err))
			continue
		}
		next := r.failed.fail(key, err)
		tried = append(tried, fmt.Sprintf("%s %s: %v (not read again for %s)", s.Origin, s.Path, err, next))
	}
	if r.fetcher != nil {
		for _, w := range workers {
			if f, left, ok := r.failed.blocked(w); ok {
				tried = append(tried, fmt.Sprintf("GetTokenizer %s: %v (not asked again for %s)", w, f.err, left.Round(time.Second)))
				continue
			}
			m, err := r.loadBundle(ctx, w)
			if err == nil {
				r.failed.succeed(w)
				return m, nil
			}
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if errors.Is(err, ErrBundleUnimplemented) {
				tried = append(tried, fmt.Sprintf("GetTokenizer %s: not implemented", w))
				continue
			}
			next := r.failed.fail(w, err)
			tried = append(tried, fmt.Sprintf("GetTokenizer %s: %v (not asked again for %s)", w, err, next))
		}
	}
	msg := fmt.Sprintf("no tokenizer for model '%s'", model)
	if len(tried) == 0 {
		msg += ": no source configured (set --tokenizer-path or --model-path, or a worker tokenizer_path/model_path label)"
	} else {
		msg += " (tried " + strings.Join(tried, "; ") + ")"
	}
	return nil, errs.New(500, wire.CodeTokenizerNotFound, "%s", msg)
}

func (r *Registry) loadBundle(ctx context.Context, worker string) (*Model, error) {
	stream, err := r.fetcher.FetchTokenizerBundle(ctx, worker)
	if err != nil {
		return nil, err
	}
	zipBytes, err := ReadBundle(stream, r.limits)
	if err != nil {
		return nil, err
	}
	files, err := OpenBundle(zipBytes, r.limits)
	if err != nil {
		return nil, err
	}
	m, err := LoadModel(MapFiles(files), ".", r.opts)
	if err != nil {
		return nil, err
	}
	m.Source = "GetTokenizer " + worker
	return m, nil
}
