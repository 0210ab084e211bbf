package doctor_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/smg-go/smg/app/doctor"
	"github.com/smg-go/smg/domain/pairing"
	"github.com/smg-go/smg/domain/worker"
)

func TestDoctorNotesTheWorkersThatCanTakePrefillOnlyRequests(t *testing.T) {
	t.Parallel()
	ws := []worker.Worker{
		{ID: "p-both", URL: "http://127.0.0.1:1", Role: worker.RolePrefill, Runtime: worker.RuntimeVLLM, KVConnector: "NixlConnector", KVRole: "kv_both"},
		{ID: "p-prod", URL: "http://127.0.0.1:2", Role: worker.RolePrefill, Runtime: worker.RuntimeVLLM, KVConnector: "NixlConnector", KVRole: "kv_producer"},
		{ID: "p-sg", URL: "http://127.0.0.1:3", Role: worker.RolePrefill, Runtime: worker.RuntimeSGLang, KVRole: "kv_both"},
		{ID: "p-mori", URL: "http://127.0.0.1:4", Role: worker.RolePrefill, Runtime: worker.RuntimeVLLM, KVConnector: "MoRIIOConnector", KVRole: "kv_both"},
		{ID: "d-both", URL: "http://127.0.0.1:5", Role: worker.RoleDecode, Runtime: worker.RuntimeVLLM, KVConnector: "NixlConnector", KVRole: "kv_both"},
		{ID: "r", URL: "http://127.0.0.1:6", Role: worker.RoleRegular, Runtime: worker.RuntimeSGLang, Mode: worker.ConnHTTP},
	}
	fs := doctor.Check(context.Background(), ws, doctor.Options{Mode: pairing.ModeLenient})
	var capable []string
	for _, f := range fs {
		if f.Kind == doctor.KindPrefillOnlyCapable {
			capable = append(capable, f.WorkerID)
			assert.Equal(t, doctor.SeverityNote, f.Severity)
			assert.Contains(t, f.Message, "--selective-pd-prefill-only-max-tokens")
		}
	}
	assert.Equal(t, []string{"p-both", "r"}, capable)
}
