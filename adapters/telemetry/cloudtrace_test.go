package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/smg-go/smg/adapters/telemetry"
)

const (
	testTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	testSpanID  = "00f067aa0ba902b7"
)

func cloudLines(t *testing.T, project string, log func(*slog.Logger)) []map[string]any {
	t.Helper()
	var buf bytes.Buffer
	log(telemetry.NewLogger(telemetry.LogOptions{Level: "debug", Format: "cloud", CloudProject: project}, &buf))
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		out = append(out, m)
	}
	return out
}

func spanCtx(t *testing.T, sampled bool) context.Context {
	t.Helper()
	tid, err := trace.TraceIDFromHex(testTraceID)
	require.NoError(t, err)
	sid, err := trace.SpanIDFromHex(testSpanID)
	require.NoError(t, err)
	var flags trace.TraceFlags
	if sampled {
		flags = trace.FlagsSampled
	}
	return trace.ContextWithSpanContext(context.Background(),
		trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: flags}))
}

// A line logged with a request's span carries Cloud Logging's trace (under the project),
// spanId and trace_sampled; a line without a trace carries none of them.
func TestCloudLogFormatWritesTraceFields(t *testing.T) {
	t.Parallel()
	ls := cloudLines(t, "my-proj", func(l *slog.Logger) {
		l.InfoContext(spanCtx(t, true), "with span")
		l.Info("no span")
		l.InfoContext(spanCtx(t, false), "unsampled")
	})
	require.Len(t, ls, 3)
	assert.Equal(t, "projects/my-proj/traces/"+testTraceID, ls[0][telemetry.CloudTraceKey])
	assert.Equal(t, testSpanID, ls[0][telemetry.CloudSpanIDKey])
	assert.Equal(t, true, ls[0][telemetry.CloudTraceSampledKey])
	for _, k := range []string{telemetry.CloudTraceKey, telemetry.CloudSpanIDKey, telemetry.CloudTraceSampledKey} {
		assert.NotContains(t, ls[1], k)
	}
	assert.Equal(t, false, ls[2][telemetry.CloudTraceSampledKey])
}

// The access line is logged without a context: the fields come from its trace_id, span_id
// and trace_sampled attributes.
func TestCloudLogFormatReadsTheAccessLineAttributes(t *testing.T) {
	t.Parallel()
	ls := cloudLines(t, "p2", func(l *slog.Logger) {
		l.LogAttrs(context.Background(), slog.LevelInfo, "request", slog.String("request_id", "r1"),
			slog.String("trace_id", testTraceID), slog.String("span_id", testSpanID), slog.Bool("trace_sampled", true))
		l.LogAttrs(context.Background(), slog.LevelInfo, "request", slog.String("trace_id", ""))
	})
	require.Len(t, ls, 2)
	assert.Equal(t, "projects/p2/traces/"+testTraceID, ls[0][telemetry.CloudTraceKey])
	assert.Equal(t, testSpanID, ls[0][telemetry.CloudSpanIDKey])
	assert.Equal(t, true, ls[0][telemetry.CloudTraceSampledKey])
	assert.Equal(t, testTraceID, ls[0]["trace_id"], "trace_id stays")
	assert.NotContains(t, ls[1], telemetry.CloudTraceKey, "an empty trace_id is no trace")
}

// Without --log-cloud-project the project comes from GOOGLE_CLOUD_PROJECT; without either the
// bare trace id is written. The json format writes no Cloud Logging field.
func TestCloudLogFormatProjectFromEnvironment(t *testing.T) {
	t.Setenv(telemetry.CloudProjectEnv, "env-proj")
	ls := cloudLines(t, "", func(l *slog.Logger) { l.InfoContext(spanCtx(t, true), "x") })
	assert.Equal(t, "projects/env-proj/traces/"+testTraceID, ls[0][telemetry.CloudTraceKey])

	t.Setenv(telemetry.CloudProjectEnv, "")
	ls = cloudLines(t, "", func(l *slog.Logger) { l.InfoContext(spanCtx(t, true), "x") })
	assert.Equal(t, testTraceID, ls[0][telemetry.CloudTraceKey])

	var buf bytes.Buffer
	telemetry.NewLogger(telemetry.LogOptions{Format: "json"}, &buf).InfoContext(spanCtx(t, true), "x")
	assert.NotContains(t, buf.String(), "logging.googleapis.com")
}
