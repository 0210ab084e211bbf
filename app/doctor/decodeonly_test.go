package doctor_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/smg-go/smg/app/doctor"
	"github.com/smg-go/smg/domain/pairing"
	"github.com/smg-go/smg/domain/worker"
)

func TestDoctorNotesTheWorkersThatCanTakeDecodeOnlyRequests(t *testing.T) {
	t.Parallel()
	ws := []worker.Worker{
		{ID: "p", URL: "http://127.0.0.1:1", Role: worker.RolePrefill, Runtime: worker.RuntimeVLLM, KVConnector: "NixlConnector", KVRole: "kv_both"},
		{ID: "d-both", URL: "http://127.0.0.1:2", Role: worker.RoleDecode, Runtime: worker.RuntimeVLLM, KVConnector: "NixlConnector", KVRole: "kv_both"},
		{ID: "d-cons", URL: "http://127.0.0.1:3", Role: worker.RoleDecode, Runtime: worker.RuntimeVLLM, KVConnector: "NixlConnector", KVRole: "kv_consumer"},
		{ID: "d-sg", URL: "http://127.0.0.1:4", Role: worker.RoleDecode, Runtime: worker.RuntimeSGLang, KVRole: "kv_both"},
		{ID: "r", URL: "http://127.0.0.1:5", Role: worker.RoleRegular, Runtime: worker.RuntimeSGLang, Mode: worker.ConnHTTP},
	}
	fs := doctor.Check(context.Background(), ws, doctor.Options{Mode: pairing.ModeLenient})
	var capable []string
	for _, f := range fs {
		if f.Kind == doctor.KindDecodeOnlyCapable {
			capable = append(capable, f.WorkerID)
			assert.Equal(t, doctor.SeverityNote, f.Severity)
		}
	}
	assert.Equal(t, []string{"d-both", "r"}, capable)
}
