package grpcfleet_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/fx"

	"github.com/smg-go/smg/adapters/engine/grpcengine"
	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/domain/text"
	"github.com/smg-go/smg/domain/text/texttest"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/load"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

// pdModel is the model the simulators serve: a name without a parser family, so the
// response content is the detokenized text as is.
const pdModel = "sim-model"

var (
	modelOnce sync.Once
	model     *text.Model
	modelErr  error
)

// qwen3 is the Qwen3 tokenizer and chat template the simulators hand out (their
// tokenizer_path), loaded once per test binary.
func qwen3(t *testing.T) (*text.Model, string) {
	t.Helper()
	dir := texttest.Dir(t, texttest.Qwen3)
	modelOnce.Do(func() { model, modelErr = text.LoadModel(text.OSFiles{}, dir, text.LoadOptions{}) })
	require.NoError(t, modelErr)
	return model, dir
}

// pdFleet starts a prefill and a decode simulator of engine (mod adjusts each config) and
// a gateway in front of them (cfgMod adjusts it), and waits until both are ready. The
// gateway's tokenizer registry starts with the test binary's Qwen3 model (parsing it costs
// seconds per gateway under -race); pdFleetLoading lets the gateway load it itself.
func pdFleet(t *testing.T, engine string, mod func(role string, c *grpcsim.Config), cfgMod func(*config.Config)) (*fleet.Gateway, *grpcsim.Server, *grpcsim.Server) {
	t.Helper()
	m, _ := qwen3(t)
	return startPD(t, engine, mod, cfgMod, fx.Decorate(func(r *text.Registry) *text.Registry { r.Put(pdModel, m); return r }))
}

// pdFleetLoading is pdFleet with the gateway loading the tokenizer from the workers'
// tokenizer_path labels.
func pdFleetLoading(t *testing.T, engine string, mod func(role string, c *grpcsim.Config), cfgMod func(*config.Config)) (*fleet.Gateway, *grpcsim.Server, *grpcsim.Server) {
	t.Helper()
	return startPD(t, engine, mod, cfgMod)
}

func startPD(t *testing.T, engine string, mod func(role string, c *grpcsim.Config), cfgMod func(*config.Config), extra ...fx.Option) (*fleet.Gateway, *grpcsim.Server, *grpcsim.Server) {
	t.Helper()
	_, dir := qwen3(t)
	return startPDIn(t, dir, engine, mod, cfgMod, extra...)
}

// startPDIn is startPD with the simulators handing out dir as their tokenizer_path.
func startPDIn(t *testing.T, dir, engine string, mod func(role string, c *grpcsim.Config), cfgMod func(*config.Config), extra ...fx.Option) (*fleet.Gateway, *grpcsim.Server, *grpcsim.Server) {
	t.Helper()
	mk := func(role string) grpcsim.Config {
		c := grpcsim.Config{Engine: engine, Role: role, Model: pdModel, TokenizerPath: dir}
		if mod != nil {
			mod(role, &c)
		}
		return c
	}
	s := sims(t, mk(grpcsim.RolePrefill), mk(grpcsim.RoleDecode))
	cfg := fleet.DefaultConfig()
	cfg.Prefill = []config.PrefillSpec{{URL: s[0].URL(), BootstrapPort: port(s[0].BootstrapPort())}}
	cfg.Decode = []string{s[1].URL()}
	if cfgMod != nil {
		cfgMod(&cfg)
	}
	g := fleet.StartGateway(t, cfg, extra...)
	g.WaitWorkers(t, 2)
	return g, s[0], s[1]
}

// chatPrompt is the prompt ids the gateway must send for a one-user-message chat.
func chatPrompt(t *testing.T, content string) []uint32 {
	t.Helper()
	m, _ := qwen3(t)
	msgs, _ := json.Marshal([]map[string]string{{"role": "user", "content": content}})
	_, ids, err := m.ChatPrompt(text.ChatInput{Messages: msgs, AddGenerationPrompt: true})
	require.NoError(t, err)
	return ids
}

// detok is the text of ids as the gateway's detokenizer shows it (special tokens skipped).
func detok(t *testing.T, ids []uint32) string {
	t.Helper()
	m, _ := qwen3(t)
	d := text.NewDecoder(m.Tokenizer, text.DecoderOptions{SkipSpecialTokens: true})
	var b strings.Builder
	for _, id := range ids {
		out, _ := d.Step(id)
		b.WriteString(out)
	}
	b.WriteString(d.Flush())
	return b.String()
}

// sseData returns the JSON payloads of an SSE body (without [DONE]) and whether it ended
// with [DONE].
func sseData(t *testing.T, body []byte) ([]map[string]any, bool) {
	t.Helper()
	var out []map[string]any
	done := false
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if line == "[DONE]" {
			done = true
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		out = append(out, m)
	}
	return out, done
}

// handoffClean asserts the simulators' counters after n handoffs: every decode got its KV
// through the room/transfer, nothing recomputed, unmatched or duplicated.
func handoffClean(t *testing.T, p, d *grpcsim.Server, n int64) {
	t.Helper()
	ps, ds := p.Stats(), d.Stats()
	require.Equal(t, n, ps.HandoffsSent, "prefill handoffs sent")
	require.Equal(t, n, ds.HandoffsReceived, "decode handoffs received")
	require.Zero(t, ds.RecomputedPrompts, "decode recomputed")
	require.Zero(t, ps.UnmatchedRooms+ds.UnmatchedRooms, "unmatched rooms")
	require.Zero(t, ps.DuplicateRooms+ds.DuplicateRooms, "duplicate rooms")
}

// directSGLang is the gRPC benchmark's reference client for the SGLang pair p/d (a gRPC
// pool of its own, closed with the test) sending wl; the workers are registered as the
// gateway sees them (gRPC, p's bootstrap port).
func directSGLang(t *testing.T, p, d *grpcsim.Server, wl load.Workload) *load.DirectGRPCSGLang {
	t.Helper()
	m, _ := qwen3(t)
	pool := grpcengine.New(grpcengine.Options{})
	t.Cleanup(func() { _ = pool.Close() })
	bp := p.BootstrapPort()
	live := func(s *grpcsim.Server, role worker.Role) *worker.Live {
		return worker.NewLive(worker.Worker{ID: string(role), URL: s.URL(), Role: role, Runtime: worker.RuntimeSGLang, Mode: worker.ConnGRPC, BootstrapPort: &bp}, worker.StatusReady)
	}
	return &load.DirectGRPCSGLang{Engines: pool, Prefill: live(p, worker.RolePrefill), Decode: live(d, worker.RoleDecode),
		BootstrapPort: bp, Tokenizer: m.Tokenizer, Workload: wl}
}
