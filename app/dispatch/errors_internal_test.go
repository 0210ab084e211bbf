package dispatch

import (
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/smg-go/smg/domain/errs"
)

func TestWriteErrorUsesTheSeedShapeAndHeaders(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		err        error
		status     int
		code       string
		body       string
		retryAfter string
	}{
		{"no worker names the leg", errs.NoAvailableWorkers("decode"), 503, "no_available_workers",
			`{"error":{"type":"server_error","code":"no_available_workers","message":"No available decode workers (all unhealthy or circuits open). Please check if decode servers are configured and healthy.","param":null}}`, ""},
		{"shed carries Retry-After", &errs.Error{Status: 503, Code: "worker_overload_protection_shed", Message: "full", RetryAfterSecs: 7}, 503,
			"worker_overload_protection_shed", `{"error":{"type":"server_error","code":"worker_overload_protection_shed","message":"full","param":null}}`, "7"},
		{"a plain error does not leak its text", errors.New("secret internals"), 500, "internal_error",
			`{"error":{"type":"server_error","code":"internal_error","message":"internal error","param":null}}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			WriteError(rec, tc.err)
			assert.Equal(t, tc.status, rec.Code)
			assert.Equal(t, tc.code, rec.Header().Get("X-SMG-Error-Code"))
			assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
			assert.Equal(t, tc.retryAfter, rec.Header().Get("Retry-After"))
			assert.Equal(t, tc.body, rec.Body.String())
		})
	}
}

func TestUpstreamMessageReadsEveryEngineShape(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, body, want string }{
		{"vLLM nested error", `{"error":{"message":"bad max_tokens","type":"BadRequestError","param":null,"code":400}}`, "bad max_tokens"},
		{"vLLM flat error", `{"object":"error","message":"flat msg","type":"BadRequestError","code":400}`, "flat msg"},
		{"SGLang HTTPException", `{"detail":"scheduler aborted"}`, "scheduler aborted"},
		{"error as a string", `{"error":"plain"}`, "plain"},
		{"not JSON", `upstream exploded`, "upstream exploded"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, upstreamMessage([]byte(tc.body)))
		})
	}
}

func TestLegErrorCodesPassTheStatusThrough(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status              int
		decodeCode, preCode string
		retryable           bool
	}{
		{400, "decode_bad_request", "prefill_upstream_error", false},
		{404, "decode_not_found", "prefill_upstream_error", false},
		{429, "decode_error", "prefill_upstream_error", true},
		{500, "decode_internal_error", "prefill_upstream_error", true},
		{502, "decode_bad_gateway", "prefill_upstream_error", true},
		{503, "decode_unavailable", "prefill_upstream_error", true},
	}
	for _, tc := range tests {
		d := decodeError(tc.status, []byte(`{"error":{"message":"m"}}`))
		assert.Equal(t, tc.status, d.Status)
		assert.Equal(t, tc.decodeCode, d.Code)
		assert.Equal(t, "m", d.Message)
		assert.Equal(t, tc.retryable, d.Retryable)
		p := prefillError(tc.status, []byte(`{"error":{"message":"m"}}`))
		assert.Equal(t, tc.status, p.Status)
		assert.Equal(t, tc.preCode, p.Code)
		assert.Equal(t, tc.retryable, p.Retryable)
	}
}
