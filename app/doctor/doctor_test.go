package doctor_test

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/doctor"
	"github.com/smg-go/smg/domain/pairing"
	"github.com/smg-go/smg/domain/worker"
)

func port(p int) *int { return &p }

func kinds(fs []doctor.Finding, id string) []string {
	var out []string
	for _, f := range fs {
		if f.WorkerID == id {
			out = append(out, f.Kind)
		}
	}
	return out
}

func TestSGLangBootstrapPortsAreDialled(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	open := ln.Addr().(*net.TCPAddr).Port
	closedLn, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := closedLn.Addr().(*net.TCPAddr).Port
	require.NoError(t, closedLn.Close())

	ws := []worker.Worker{
		{ID: "p-open", URL: "http://127.0.0.1:1", Role: worker.RolePrefill, Runtime: worker.RuntimeSGLang, BootstrapPort: port(open)},
		{ID: "p-closed", URL: "http://127.0.0.1:2", Role: worker.RolePrefill, Runtime: worker.RuntimeSGLang, BootstrapPort: port(closed)},
		{ID: "p-none", URL: "http://127.0.0.1:3", Role: worker.RolePrefill, Runtime: worker.RuntimeSGLang},
		{ID: "d", URL: "http://127.0.0.1:4", Role: worker.RoleDecode, Runtime: worker.RuntimeSGLang},
	}
	fs := doctor.Check(context.Background(), ws, doctor.Options{Mode: pairing.ModeLenient})
	assert.Empty(t, kinds(fs, "p-open"))
	assert.Equal(t, []string{doctor.KindBootstrapUnreachable}, kinds(fs, "p-closed"))
	assert.Equal(t, []string{doctor.KindNoBootstrapPort}, kinds(fs, "p-none"))
	assert.Empty(t, kinds(fs, "d"))
	for _, f := range fs {
		if f.Kind == doctor.KindBootstrapUnreachable {
			assert.Contains(t, f.Message, strconv.Itoa(closed))
		}
	}
}

func TestMooncakePrefillWithoutEngineIDAndMissingRoles(t *testing.T) {
	t.Parallel()
	ws := []worker.Worker{
		{ID: "mp", URL: "http://127.0.0.1:1", Role: worker.RolePrefill, Runtime: worker.RuntimeVLLM, KVConnector: "MooncakeConnector", BootstrapPort: port(8998)},
		{ID: "mp-ok", URL: "http://127.0.0.1:2", Role: worker.RolePrefill, Runtime: worker.RuntimeVLLM, KVConnector: "MooncakeConnector", KVEngineID: "e1", BootstrapPort: port(8998)},
	}
	fs := doctor.Check(context.Background(), ws, doctor.Options{})
	assert.Equal(t, []string{doctor.KindMooncakeNoEngineID}, kinds(fs, "mp"))
	assert.Empty(t, kinds(fs, "mp-ok"))
	var missing []string
	for _, f := range fs {
		if f.Kind == doctor.KindMissingRole {
			missing = append(missing, f.Role)
		}
	}
	assert.Equal(t, []string{"decode"}, missing)
}

// Strict mode refuses what lenient accepts: the same fleet is unpairable only under strict.
func TestPairingModeDecidesUnpairable(t *testing.T) {
	t.Parallel()
	ws := []worker.Worker{
		{ID: "p", URL: "http://127.0.0.1:1", Role: worker.RolePrefill, Runtime: worker.RuntimeVLLM, KVConnector: "NixlConnector",
			Labels: map[string]string{"kv_cache_dtype": "auto"}},
		{ID: "d", URL: "http://127.0.0.1:2", Role: worker.RoleDecode, Runtime: worker.RuntimeVLLM, KVConnector: "NixlConnector"},
	}
	assert.Empty(t, doctor.Check(context.Background(), ws, doctor.Options{Mode: pairing.ModeLenient}))
	fs := doctor.Check(context.Background(), ws, doctor.Options{Mode: pairing.ModeStrict})
	assert.Equal(t, []string{doctor.KindUnpairable}, kinds(fs, "p"))
	assert.Equal(t, []string{doctor.KindUnpairable}, kinds(fs, "d"))
	for _, f := range fs {
		assert.Contains(t, f.Message, "kv_cache_dtype (")
	}
}

func TestContextMismatch(t *testing.T) {
	t.Parallel()
	ws := []worker.Worker{
		{ID: "p", URL: "http://127.0.0.1:1", Role: worker.RolePrefill, Runtime: worker.RuntimeVLLM, KVConnector: "NixlConnector",
			Labels: map[string]string{"max_model_len": "32768"}},
		{ID: "d-same", URL: "http://127.0.0.1:2", Role: worker.RoleDecode, Runtime: worker.RuntimeVLLM, KVConnector: "NixlConnector",
			Labels: map[string]string{"max_model_len": "32768"}},
		{ID: "d-short", URL: "http://127.0.0.1:3", Role: worker.RoleDecode, Runtime: worker.RuntimeVLLM, KVConnector: "NixlConnector",
			Labels: map[string]string{"max_model_len": "8192"}},
	}
	fs := doctor.Check(context.Background(), ws, doctor.Options{})
	var mismatch []string
	for _, f := range fs {
		if f.Kind == doctor.KindContextMismatch {
			mismatch = append(mismatch, f.Message)
		}
	}
	require.Len(t, mismatch, 1, "%+v", fs)
	assert.Contains(t, mismatch[0], "d-short")
	assert.Contains(t, mismatch[0], "longer than 8192 tokens")
	assert.Empty(t, kinds(fs, "d-same"))
}

// --probe-requests sends its HTTP probe only to HTTP NIXL prefills: a gRPC one (by its
// connection mode or, without one, its grpc:// scheme) gets a note, not an error.
func TestNixlProbeSkipsGRPCWorkers(t *testing.T) {
	t.Parallel()
	nixl := func(id, url string, mode worker.ConnectionMode) worker.Worker {
		return worker.Worker{ID: id, URL: url, Mode: mode, Role: worker.RolePrefill, Runtime: worker.RuntimeVLLM, KVConnector: "NixlConnector",
			Labels: map[string]string{"kv_cache_dtype": "auto"}} // a servicer that reports its layout
	}
	ws := []worker.Worker{
		nixl("p-grpc", "grpc://127.0.0.1:50051", worker.ConnGRPC),
		nixl("p-grpc-nomode", "grpcs://127.0.0.1:50052", ""),
		nixl("p-http", "http://127.0.0.1:8100", worker.ConnHTTP),
		{ID: "d", URL: "grpc://127.0.0.1:50053", Mode: worker.ConnGRPC, Role: worker.RoleDecode, Runtime: worker.RuntimeVLLM, KVConnector: "NixlConnector",
			Labels: map[string]string{"kv_cache_dtype": "auto"}},
	}
	var probed []string
	fs := doctor.Check(context.Background(), ws, doctor.Options{Mode: pairing.ModeLenient,
		ProbeNixl: func(_ context.Context, w worker.Worker) (bool, error) {
			probed = append(probed, w.ID)
			return true, nil
		}})
	assert.Equal(t, []string{"p-http"}, probed, "only the HTTP prefill is probed")
	for _, id := range []string{"p-grpc", "p-grpc-nomode"} {
		assert.Equal(t, []string{doctor.KindNixlNotProbedGRPC}, kinds(fs, id), id)
	}
	assert.Empty(t, kinds(fs, "p-http"))
	for _, f := range fs {
		assert.NotEqual(t, doctor.SeverityError, f.Severity, f.Kind+": "+f.Message)
		if f.Kind == doctor.KindNixlNotProbedGRPC {
			assert.Equal(t, doctor.SeverityNote, f.Severity)
			assert.Contains(t, f.Message, "not probed over gRPC")
		}
	}
}

// Every worker is probed at once: a fleet whose failing probes each take the whole timeout
// is checked in about one timeout, and only the failing worker is named.
func TestHealthProbeNamesTheFailingWorkerWithinOneTimeout(t *testing.T) {
	t.Parallel()
	ws := []worker.Worker{
		{ID: "p", URL: "http://127.0.0.1:1", Role: worker.RolePrefill, Runtime: worker.RuntimeVLLM, KVConnector: "NixlConnector"},
		{ID: "d-ok", URL: "http://127.0.0.1:2", Role: worker.RoleDecode, Runtime: worker.RuntimeVLLM, KVConnector: "NixlConnector"},
		{ID: "d-dead", URL: "http://127.0.0.1:3", Role: worker.RoleDecode, Runtime: worker.RuntimeVLLM, KVConnector: "NixlConnector"},
		{ID: "d-dead2", URL: "http://127.0.0.1:4", Role: worker.RoleDecode, Runtime: worker.RuntimeVLLM, KVConnector: "NixlConnector"},
	}
	const timeout = 300 * time.Millisecond
	start := time.Now()
	fs := doctor.Check(context.Background(), ws, doctor.Options{Mode: pairing.ModeLenient, HealthTimeout: timeout,
		ProbeHealth: func(ctx context.Context, w worker.Worker) error {
			if strings.HasPrefix(w.ID, "d-dead") {
				<-ctx.Done()
				return ctx.Err()
			}
			return nil
		}})
	assert.Less(t, time.Since(start), 2*timeout, "probes run at once, each bounded by the timeout")
	assert.Empty(t, kinds(fs, "p"))
	assert.Empty(t, kinds(fs, "d-ok"))
	for _, id := range []string{"d-dead", "d-dead2"} {
		assert.Equal(t, []string{doctor.KindHealthProbeFailed}, kinds(fs, id), id)
	}
	for _, f := range fs {
		assert.Equal(t, doctor.SeverityError, f.Severity)
		assert.Contains(t, f.Message, "deadline exceeded")
	}
}

// What a gRPC servicer silently does not do: a published vLLM servicer reports no KV layout
// (a newer one does); SGLang's ignores a --dp-aware rank's data_parallel_rank. HTTP workers
// and other engines get neither finding.
func TestServicerGapsAreNamed(t *testing.T) {
	t.Parallel()
	rank := 1
	ws := []worker.Worker{
		{ID: "v-old", URL: "grpc://127.0.0.1:1", Mode: worker.ConnGRPC, Role: worker.RolePrefill, Runtime: worker.RuntimeVLLM, KVConnector: "NixlConnector"},
		{ID: "v-new", URL: "grpc://127.0.0.1:2", Mode: worker.ConnGRPC, Role: worker.RoleDecode, Runtime: worker.RuntimeVLLM, KVConnector: "NixlConnector",
			Labels: map[string]string{"kv_cache_dtype": "auto", "block_size": "16"}},
		{ID: "v-http", URL: "http://127.0.0.1:3", Role: worker.RoleDecode, Runtime: worker.RuntimeVLLM, KVConnector: "NixlConnector"},
		{ID: "sg-dp", URL: "grpc://127.0.0.1:4@1", Mode: worker.ConnGRPC, Role: worker.RoleDecode, Runtime: worker.RuntimeSGLang, DPRank: &rank},
		{ID: "sg-http-dp", URL: "http://127.0.0.1:5@1", Role: worker.RoleDecode, Runtime: worker.RuntimeSGLang, DPRank: &rank},
	}
	fs := doctor.Check(context.Background(), ws, doctor.Options{Mode: pairing.ModeLenient})
	gaps := func(id string) []string { // the SGLang decodes pair with no vLLM prefill: not the point here
		var out []string
		for _, k := range kinds(fs, id) {
			if k == doctor.KindLayoutUnreported || k == doctor.KindDPPinIgnored {
				out = append(out, k)
			}
		}
		return out
	}
	assert.Equal(t, []string{doctor.KindLayoutUnreported}, gaps("v-old"))
	assert.Empty(t, gaps("v-new"))
	assert.Empty(t, gaps("v-http"))
	assert.Equal(t, []string{doctor.KindDPPinIgnored}, gaps("sg-dp"))
	assert.Empty(t, gaps("sg-http-dp"))
	for _, f := range fs {
		switch f.Kind {
		case doctor.KindLayoutUnreported:
			assert.Equal(t, doctor.SeverityWarning, f.Severity)
			assert.Contains(t, f.Message, "strict")
		case doctor.KindDPPinIgnored:
			assert.Contains(t, f.Message, "ignores data_parallel_rank")
		}
	}
}
