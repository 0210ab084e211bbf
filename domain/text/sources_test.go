package text_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/text"
	"github.com/smg-go/smg/domain/text/texttest"
	"github.com/smg-go/smg/domain/wire"
)

func TestSourceOrder(t *testing.T) {
	t.Parallel()
	assert.Equal(t, []text.Source{{Origin: "--tokenizer-path", Path: "/tok"}, {Origin: "--model-path", Path: "/model"}},
		text.StartupSources("/tok", "/model"))
	assert.Equal(t, []text.Source{{Origin: "--model-path", Path: "/model"}}, text.StartupSources("", "/model"))
	got := text.WorkerSources(map[string]string{wire.LabelTokenizerPath: "/w/tok", wire.LabelModelPath: "/w/model"}, "/tok", "/w/model")
	assert.Equal(t, []text.Source{
		{Origin: "label tokenizer_path", Path: "/w/tok"},
		{Origin: "label model_path", Path: "/w/model"},
		{Origin: "--tokenizer-path", Path: "/tok"},
	}, got, "labels first, then flags; a repeated path is tried once")
	assert.Empty(t, text.WorkerSources(nil, "", ""))
}

type fakeFetcher struct {
	calls   atomic.Int32
	mu      sync.Mutex
	bundles map[string][]byte // worker -> zip; missing = UNIMPLEMENTED
}

func (f *fakeFetcher) FetchTokenizerBundle(_ context.Context, worker string) (text.BundleStream, error) {
	f.calls.Add(1)
	f.mu.Lock()
	z, ok := f.bundles[worker]
	f.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("rpc: %w", text.ErrBundleUnimplemented)
	}
	return streamOf(z, shaHex(z)), nil
}

func TestRegistryLoadsLocalSourcesInOrderOnce(t *testing.T) {
	t.Parallel()
	dir := texttest.Dir(t, texttest.Qwen3)
	reg := text.NewRegistry(text.OSFiles{}, nil, text.LoadOptions{})
	sources := []text.Source{
		{Origin: "label tokenizer_path", Path: "Qwen/Qwen3-8B"}, // not a path: a hub id
		{Origin: "--model-path", Path: filepath.Join(dir, "tokenizer.json")},
		{Origin: "--tokenizer-path", Path: dir},
	}
	var wg sync.WaitGroup
	models := make([]*text.Model, 8)
	for i := range models {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m, err := reg.Get(context.Background(), "qwen3", sources, nil)
			assert.NoError(t, err)
			models[i] = m
		}()
	}
	wg.Wait()
	for _, m := range models {
		assert.Same(t, models[0], m, "one load, shared")
	}
	assert.Equal(t, filepath.Join(dir, "tokenizer.json"), models[0].Source, "the file source after the failed hub id")
	assert.NotNil(t, models[0].ChatTemplate, "tokenizer_config.json beside the file")
}

func TestRegistryFallsBackToGetTokenizer(t *testing.T) {
	t.Parallel()
	f := &fakeFetcher{bundles: map[string][]byte{"grpc://127.0.0.1:50052": tinyBundle(t)}}
	reg := text.NewRegistry(text.OSFiles{}, f, text.LoadOptions{})
	m, err := reg.Get(context.Background(), "qwen3", []text.Source{{Origin: "--model-path", Path: t.TempDir()}},
		[]string{"grpc://127.0.0.1:50051", "grpc://127.0.0.1:50052"})
	require.NoError(t, err)
	assert.Equal(t, "GetTokenizer grpc://127.0.0.1:50052", m.Source)
	assert.Equal(t, int32(2), f.calls.Load(), "the worker without the RPC was tried first")
	again, err := reg.Get(context.Background(), "qwen3", nil, nil)
	require.NoError(t, err)
	assert.Same(t, m, again)
	assert.Equal(t, int32(2), f.calls.Load(), "loaded once")
}

func TestRegistryTokenizerNotFound(t *testing.T) {
	t.Parallel()
	empty := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(empty, "vocab.json"), []byte("{}"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(empty, "merges.txt"), []byte(""), 0o600))
	f := &fakeFetcher{bundles: map[string][]byte{"grpc://127.0.0.1:1": []byte("not a zip")}}
	reg := text.NewRegistry(text.OSFiles{}, f, text.LoadOptions{})
	_, err := reg.Get(context.Background(), "m", []text.Source{
		{Origin: "--tokenizer-path", Path: "meta-llama/Llama-3.1-8B"},
		{Origin: "--model-path", Path: empty},
	}, []string{"grpc://127.0.0.1:1", "grpc://127.0.0.1:2"})
	e, ok := errs.As(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, 500, e.Status)
	assert.Equal(t, wire.CodeTokenizerNotFound, e.Code)
	for _, want := range []string{"hub ids cannot be fetched", "vocab.json+merges.txt", "not a zip", "grpc://127.0.0.1:2: not implemented"} {
		assert.Contains(t, e.Message, want)
	}
	_, err = text.NewRegistry(text.OSFiles{}, nil, text.LoadOptions{}).Get(context.Background(), "m", nil, nil)
	e, ok = errs.As(err)
	require.True(t, ok)
	assert.Contains(t, e.Message, "no source configured")
	assert.False(t, errors.Is(err, text.ErrHubID))
}

func TestLoadModelPicksTheChatTemplate(t *testing.T) {
	t.Parallel()
	tok := tinyTokenizerJSON(t)
	cfg := []byte(`{"eos_token":"<|im_end|>","chat_template":"from-config"}`)
	cases := []struct {
		name     string
		files    text.MapFiles
		explicit string
		want     string
	}{
		{"tokenizer_config.json", text.MapFiles{"tokenizer.json": tok, "tokenizer_config.json": cfg}, "", "from-config"},
		{"chat_template.jinja beats the config", text.MapFiles{"tokenizer.json": tok, "tokenizer_config.json": cfg, "chat_template.jinja": []byte("from-jinja"), "a.jinja": []byte("other")}, "", "from-jinja"},
		{"another .jinja", text.MapFiles{"tokenizer.json": tok, "tokenizer_config.json": cfg, "tool.jinja": []byte("other-jinja")}, "", "other-jinja"},
		{"chat_template.json first", text.MapFiles{"tokenizer.json": tok, "chat_template.json": []byte(`{"chat_template":"from-json"}`), "chat_template.jinja": []byte("x")}, "", "from-json"},
		{"explicit path wins", text.MapFiles{"tokenizer.json": tok, "chat_template.jinja": []byte("x")}, filepath.Join("testdata", "templates", "strict.jinja"), "[SYS]"},
	}
	for _, c := range cases {
		m, err := text.LoadModel(c.files, ".", text.LoadOptions{ChatTemplatePath: c.explicit, Now: fixedNow})
		require.NoError(t, err, c.name)
		require.Equal(t, []uint32{256, 257, '!'}, m.Tokenizer.Encode("hi<|end|>!", false), c.name)
		got, err := m.ChatTemplate.Render(text.ChatInput{Messages: []byte(`[{"role":"user","content":"q"}]`)})
		require.NoError(t, err, c.name)
		assert.Contains(t, got, c.want, c.name)
	}
}

// blockingFetcher holds GetTokenizer until release is closed.
type blockingFetcher struct {
	release chan struct{}
	bundle  []byte
	calls   atomic.Int32
}

func (f *blockingFetcher) FetchTokenizerBundle(ctx context.Context, _ string) (text.BundleStream, error) {
	f.calls.Add(1)
	select {
	case <-f.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return streamOf(f.bundle, shaHex(f.bundle)), nil
}

func TestRegistryLoadOutlivesACancelledCaller(t *testing.T) {
	t.Parallel()
	f := &blockingFetcher{release: make(chan struct{}), bundle: tinyBundle(t)}
	reg := text.NewRegistry(text.OSFiles{}, f, text.LoadOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := reg.Get(ctx, "qwen3", nil, []string{"grpc://127.0.0.1:50051"})
		done <- err
	}()
	for f.calls.Load() == 0 {
		runtime.Gosched()
	}
	cancel()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled, "the cancelled caller stops waiting")
	case <-time.After(10 * time.Second):
		t.Fatal("cancelled caller still waiting")
	}
	close(f.release)
	m, err := reg.Get(context.Background(), "qwen3", nil, []string{"grpc://127.0.0.1:50051"})
	require.NoError(t, err)
	assert.Equal(t, "GetTokenizer grpc://127.0.0.1:50051", m.Source)
	assert.Equal(t, int32(1), f.calls.Load(), "the second caller waited for the same load")
}

func tinyBundle(t testing.TB) []byte {
	return makeZip(t, map[string][]byte{"tokenizer.json": tinyTokenizerJSON(t), "chat_template.jinja": []byte("{{ messages[0].content }}")},
		"tokenizer.json", "chat_template.jinja")
}

// A worker whose bundle failed is not asked again within its backoff window, which doubles
// on each failure; the error of every request in the window still names it. A good bundle
// after the window loads.
func TestRegistryRemembersAFailedBundle(t *testing.T) {
	t.Parallel()
	const w = "grpc://127.0.0.1:50061"
	f := &fakeFetcher{bundles: map[string][]byte{w: []byte("not a zip")}}
	var mu sync.Mutex
	now := time.Unix(1_000_000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	reg := text.NewRegistry(text.OSFiles{}, f, text.LoadOptions{})
	reg.SetBundleBackoff(10*time.Second, 25*time.Second, clock)
	get := func() string {
		_, err := reg.Get(context.Background(), "m", nil, []string{w})
		e, ok := errs.As(err)
		require.True(t, ok, "%v", err)
		assert.Equal(t, wire.CodeTokenizerNotFound, e.Code)
		assert.Contains(t, e.Message, "not a zip", "the remembered failure is named")
		return e.Message
	}

	assert.Contains(t, get(), "not asked again for 10s")
	require.Equal(t, int32(1), f.calls.Load())
	for i := 0; i < 5; i++ {
		get()
	}
	assert.Equal(t, int32(1), f.calls.Load(), "fetched once in the window")

	advance(10 * time.Second)
	assert.Contains(t, get(), "not asked again for 20s", "the window doubles")
	assert.Equal(t, int32(2), f.calls.Load())
	advance(19 * time.Second)
	get()
	assert.Equal(t, int32(2), f.calls.Load())
	advance(time.Second)
	assert.Contains(t, get(), "not asked again for 25s", "capped")
	assert.Equal(t, int32(3), f.calls.Load())

	f.mu.Lock()
	f.bundles[w] = tinyBundle(t)
	f.mu.Unlock()
	advance(25 * time.Second)
	m, err := reg.Get(context.Background(), "m", nil, []string{w})
	require.NoError(t, err)
	assert.Equal(t, "GetTokenizer "+w, m.Source)
	assert.Equal(t, int32(4), f.calls.Load())
}

// A local source that failed to load is not read again within its backoff window: a file
// fixed in the meantime is picked up once the window passed.
func TestRegistryRemembersAFailedLocalSource(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte("\x00 not json"), 0o600))
	var mu sync.Mutex
	now := time.Unix(1_000_000, 0)
	reg := text.NewRegistry(text.OSFiles{}, nil, text.LoadOptions{})
	reg.SetBundleBackoff(10*time.Second, time.Minute, func() time.Time { mu.Lock(); defer mu.Unlock(); return now })
	src := []text.Source{{Origin: "label tokenizer_path", Path: dir}}

	_, err := reg.Get(context.Background(), "m", src, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not read again for 10s")

	good, err := os.ReadFile(filepath.Join(texttest.Dir(t, texttest.Qwen3), "tokenizer.json"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tokenizer.json"), good, 0o600))
	_, err = reg.Get(context.Background(), "m", src, nil)
	require.Error(t, err, "within the window the file is not read again")
	assert.Contains(t, err.Error(), "invalid character", "the remembered failure is named")

	mu.Lock()
	now = now.Add(10 * time.Second)
	mu.Unlock()
	m, err := reg.Get(context.Background(), "m", src, nil)
	require.NoError(t, err)
	assert.Equal(t, dir, m.Source)
}

func TestCheckLocal(t *testing.T) {
	t.Parallel()
	assert.NoError(t, text.CheckLocal(text.OSFiles{}, t.TempDir()))
	assert.ErrorIs(t, text.CheckLocal(text.OSFiles{}, "meta-llama/Llama-3.1-8B-Instruct"), text.ErrHubID)
}
