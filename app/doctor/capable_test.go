package doctor_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/smg-go/smg/app/doctor"
	"github.com/smg-go/smg/domain/pairing"
	"github.com/smg-go/smg/domain/worker"
)

// The doctor notes the workers selective PD may send a whole request to: decode-only (a
// kv_both vLLM decode, a regular worker) and prefill-only (a kv_both vLLM prefill that is not
// MoRI-IO, a regular worker); never a SGLang decode or prefill, whatever its kv_role label, nor
// a kv_consumer/kv_producer vLLM worker. Each note is a note (never fails the doctor) and
// names the flag that turns the shape on.
func TestDoctorNotesTheWorkersThatCanTakeAWholeRequest(t *testing.T) {
	t.Parallel()
	ws := []worker.Worker{
		{ID: "p-both", URL: "http://127.0.0.1:1", Role: worker.RolePrefill, Runtime: worker.RuntimeVLLM, KVConnector: "NixlConnector", KVRole: "kv_both"},
		{ID: "p-prod", URL: "http://127.0.0.1:2", Role: worker.RolePrefill, Runtime: worker.RuntimeVLLM, KVConnector: "NixlConnector", KVRole: "kv_producer"},
		{ID: "p-sg", URL: "http://127.0.0.1:3", Role: worker.RolePrefill, Runtime: worker.RuntimeSGLang, KVRole: "kv_both"},
		{ID: "p-mori", URL: "http://127.0.0.1:4", Role: worker.RolePrefill, Runtime: worker.RuntimeVLLM, KVConnector: "MoRIIOConnector", KVRole: "kv_both"},
		{ID: "d-both", URL: "http://127.0.0.1:5", Role: worker.RoleDecode, Runtime: worker.RuntimeVLLM, KVConnector: "NixlConnector", KVRole: "kv_both"},
		{ID: "d-cons", URL: "http://127.0.0.1:6", Role: worker.RoleDecode, Runtime: worker.RuntimeVLLM, KVConnector: "NixlConnector", KVRole: "kv_consumer"},
		{ID: "d-sg", URL: "http://127.0.0.1:7", Role: worker.RoleDecode, Runtime: worker.RuntimeSGLang, KVRole: "kv_both"},
		{ID: "r", URL: "http://127.0.0.1:8", Role: worker.RoleRegular, Runtime: worker.RuntimeSGLang, Mode: worker.ConnHTTP},
	}
	fs := doctor.Check(context.Background(), ws, doctor.Options{Mode: pairing.ModeLenient})
	for _, tc := range []struct {
		kind, flag string
		want       []string
	}{
		{doctor.KindDecodeOnlyCapable, "--selective-pd-uncached-tokens", []string{"d-both", "r"}},
		{doctor.KindPrefillOnlyCapable, "--selective-pd-prefill-only-max-tokens", []string{"p-both", "r"}},
	} {
		var got []string
		for _, f := range fs {
			if f.Kind == tc.kind {
				got = append(got, f.WorkerID)
				assert.Equal(t, doctor.SeverityNote, f.Severity, tc.kind)
				assert.Contains(t, f.Message, tc.flag, tc.kind)
			}
		}
		assert.Equal(t, tc.want, got, tc.kind)
	}
}
