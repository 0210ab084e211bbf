package grpcfleet_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"

	"github.com/smg-go/smg/adapters/telemetry"
	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/domain/text"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

// debugPD is pdFleet logging JSON at debug (the seed's RUST_LOG=smg=info,smg::routers=debug
// maps to --log-level debug) into the returned sink.
func debugPD(t *testing.T, engine string, mod func(role string, c *grpcsim.Config)) (*logSink, func() map[string]any, *grpcsim.Server, *grpcsim.Server) {
	t.Helper()
	m, _ := qwen3(t)
	logs := &logSink{}
	g, p, d := startPD(t, engine, mod, func(c *config.Config) { c.LogLevel = "debug" },
		fx.Decorate(func(r *text.Registry) *text.Registry { r.Put(pdModel, m); return r }),
		fx.Decorate(func(*slog.Logger) *slog.Logger {
			return telemetry.NewLogger(telemetry.LogOptions{Level: "debug", JSON: true}, logs)
		}))
	send := func() map[string]any {
		r := g.Post(t, "/v1/completions", map[string]any{"model": pdModel, "prompt": "debug me", "max_tokens": 2}, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		return r.Object(t)
	}
	return logs, send, p, d
}

// debugRecords are the sink's records whose msg is msg.
func debugRecords(l *logSink, msg string) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(l.b.Bytes()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// The seed's debug recipe ("Debug Logging") gives on gRPC the lines it gives on HTTP: each
// selected pair ("PD pair selected": route, prefill, decode, rooms) and, on a vLLM pair,
// whether the prefill's kv_transfer_params were relayed ("vLLM PD pair": params_relayed),
// which agrees with what the decode simulator received.
func TestGRPCDebugLogNamesThePairAndTheRelay(t *testing.T) {
	t.Parallel()
	t.Run("sglang", func(t *testing.T) {
		t.Parallel()
		logs, send, p, d := debugPD(t, grpcsim.EngineSGLang, nil)
		send()
		recs := debugRecords(logs, "PD pair selected")
		require.Len(t, recs, 1)
		assert.Equal(t, p.URL(), recs[0]["prefill"])
		assert.Equal(t, d.URL(), recs[0]["decode"])
		assert.Equal(t, "/v1/completions", recs[0]["route"], "as the HTTP line names it")
		assert.Len(t, recs[0]["rooms"], 1, "one bootstrap room")
		assert.EqualValues(t, 1, d.Stats().HandoffsReceived)
	})
	for _, fault := range []string{"", grpcsim.FaultNoKVParams} {
		name := map[string]string{"": "vllm relayed", grpcsim.FaultNoKVParams: "vllm not relayed"}[fault]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			logs, send, p, d := debugPD(t, grpcsim.EngineVLLM, func(role string, c *grpcsim.Config) {
				c.KVConnector = grpcsim.ConnectorNixl
				if role == grpcsim.RolePrefill && fault != "" {
					c.Faults = []string{fault}
				}
			})
			send()
			require.Len(t, debugRecords(logs, "PD pair selected"), 1)
			recs := debugRecords(logs, "vLLM PD pair")
			require.Len(t, recs, 1)
			assert.Equal(t, p.URL(), recs[0]["prefill"])
			assert.Equal(t, d.URL(), recs[0]["decode"])
			relayed := d.Stats().HandoffsReceived == 1
			assert.Equal(t, fault == "", relayed, "the decode sim's handoffs: %+v", d.Stats())
			assert.Equal(t, relayed, recs[0]["params_relayed"])
		})
	}
}
