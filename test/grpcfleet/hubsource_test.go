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

// A --model-path naming a hub id (not a local path) cannot be fetched by this gateway: a
// WARN at start-up names the flag and the path instead of a silent fallback, and requests
// are still served (here with the workers' tokenizer preloaded). A local --tokenizer-path draws no warning.
func TestHubModelPathIsWarnedAtStartup(t *testing.T) {
	t.Parallel()
	const hubID = "no-such-org/no-such-model"
	m, _ := qwen3(t)
	logs := &logSink{}
	g, _, _ := startPD(t, grpcsim.EngineSGLang, nil, func(c *config.Config) {
		c.ModelPath, c.TokenizerPath = hubID, t.TempDir()
	}, fx.Decorate(func(r *text.Registry) *text.Registry { r.Put(pdModel, m); return r }), // the workers' tokenizer, loaded
		fx.Decorate(func(*slog.Logger) *slog.Logger {
			return telemetry.NewLogger(telemetry.LogOptions{Level: "info", JSON: true}, logs)
		}))

	r := g.Post(t, "/v1/chat/completions", map[string]any{"model": pdModel, "max_tokens": 2,
		"messages": []map[string]string{{"role": "user", "content": "which tokenizer"}}}, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)

	warned := map[string]string{}
	logs.mu.Lock()
	sc := bufio.NewScanner(bytes.NewReader(logs.b.Bytes()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && m["level"] == "WARN" {
			if f, ok := m["flag"].(string); ok {
				warned[f], _ = m["path"].(string)
			}
		}
	}
	logs.mu.Unlock()
	assert.Equal(t, map[string]string{"--model-path": hubID}, warned)
}
