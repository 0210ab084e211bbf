package telemetry_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/telemetry"
	"github.com/smg-go/smg/app/config"
)

func TestCloudLogFormatUsesSeverityAndMessage(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	cfg := config.Default()
	cfg.LogFormat = "cloud"
	cfg.LogLevel = "debug"
	log := telemetry.NewLogger(telemetry.LogOptions{Level: cfg.LogLevel, Format: cfg.LogFormat, JSON: cfg.LogJSON}, &buf)
	log.Debug("d")
	log.Info("i", "k", "v")
	log.Warn("w")
	log.Error("e")
	var sev, msg []string
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		assert.NotContains(t, m, "level")
		assert.NotContains(t, m, "msg")
		assert.Equal(t, "smg", m["service"])
		sev = append(sev, m["severity"].(string))
		msg = append(msg, m["message"].(string))
	}
	assert.Equal(t, []string{"DEBUG", "INFO", "WARNING", "ERROR"}, sev)
	assert.Equal(t, []string{"d", "i", "w", "e"}, msg)
}

func TestLogFormatOverridesLogJSON(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		format string
		json   bool
		isJSON bool
	}{{"", true, true}, {"", false, false}, {"text", true, false}, {"json", false, true}} {
		var buf bytes.Buffer
		cfg := config.Default()
		cfg.LogFormat, cfg.LogJSON = tc.format, tc.json
		telemetry.NewLogger(telemetry.LogOptions{Level: cfg.LogLevel, Format: cfg.LogFormat, JSON: cfg.LogJSON}, &buf).Info("hello")
		assert.Equal(t, tc.isJSON, json.Valid(bytes.TrimSpace(buf.Bytes())), "%+v: %s", tc, buf.String())
	}
	cfg := config.Default()
	cfg.LogFormat = "xml"
	err := cfg.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--log-format")
}
