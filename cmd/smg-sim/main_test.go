package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	vllmpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/vllm"
	"github.com/smg-go/smg/test/sim"
)

// lockedBuffer is a bytes.Buffer safe for one writer and one poller.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var readyLine = regexp.MustCompile(`^smg-sim sglang prefill listening on (http://127\.0\.0\.1:\d+) bootstrap=(\d+) engine_id=e-1\n$`)

func TestRunPrintsReadyLineAndStops(t *testing.T) {
	cmd := newCommand()
	var out lockedBuffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--engine", "sglang", "--role", "prefill", "--engine-id", "e-1",
		"--handoff-timeout", "0.5", "--hang-max", "2s", "--itl-ms", "0", "--fault", "delay-body:1"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.HasSuffix(out.String(), "\n") && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	m := readyLine.FindStringSubmatch(out.String())
	require.NotNil(t, m, "ready line: %q", out.String())
	resp, err := http.Get(m[1] + "/health")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.NotEqual(t, "0", m[2])
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("run did not stop")
	}
}

func TestFlagErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--role", "decode"}, "--engine and --role are required"},
		{[]string{"--engine", "tgi", "--role", "decode"}, `sim: engine "tgi": want "sglang" or "vllm"`},
		{[]string{"--engine", "vllm", "--role", "decode", "--kv-connector", "lmcache"}, `sim: kv connector "lmcache"`},
		{[]string{"--engine", "vllm", "--role", "decode", "--fault", "status"}, `needs an argument`},
		{[]string{"--engine", "vllm", "--role", "decode", "--handoff-timeout", "soon"}, "want a duration"},
		{[]string{"--engine", "vllm", "--role", "decode", "--kv-connector", "moriio", "--moriio-mode", "push"}, `sim: moriio mode "push"`},
		{[]string{"--engine", "vllm", "--role", "decode", "--kv-connector", "moriio", "--moriio-notify-port", "70000"}, "out of range"},
	}
	for _, tc := range cases {
		cmd := newCommand()
		var out lockedBuffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(tc.args)
		err := cmd.Execute()
		require.Error(t, err, tc.args)
		assert.Contains(t, err.Error(), tc.want, tc.args)
	}
}

func TestHelpDocumentsEveryFlag(t *testing.T) {
	cmd := newCommand()
	var out lockedBuffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--help"})
	require.NoError(t, cmd.Execute())
	for _, f := range []string{"--engine", "--role", "--host", "--port", "--model", "--engine-id", "--bootstrap-port",
		"--kv-connector", "--prefill-tokens-per-s", "--itl-ms", "--itl-per-running-ms", "--max-running",
		"--handoff-timeout", "--max-model-len", "--max-running-requests", "--fault", "--hang-max",
		"--moriio-mode", "--moriio-handshake-port", "--moriio-notify-port", "handoff-wrong-transfer-id", "leaked_blocks",
		"--block-size", "--kv-cache-blocks", "--prefill-fixed-ms", "--prefill-chunk-tokens", "--kv-transfer-ms-per-block", "--tokenizer-path", "--instances"} {
		assert.Contains(t, out.String(), f)
	}
}

var grpcReadyLine = regexp.MustCompile(`^smg-sim vllm decode listening on grpc://(127\.0\.0\.1:\d+) bootstrap=0 stats=(http://127\.0\.0\.1:\d+) engine_id=g-1\n$`)

func TestRunGRPCServesTheEngineServiceAndStats(t *testing.T) {
	cmd := newCommand()
	var out lockedBuffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--transport", "grpc", "--engine", "vllm", "--role", "decode", "--engine-id", "g-1",
		"--kv-connector", "MultiConnector", "--multi-children", "NixlConnector,LMCacheConnectorV1", "--pairing-protocol", "p", "--vllm-servicer", "1.11"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.HasSuffix(out.String(), "\n") && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	m := grpcReadyLine.FindStringSubmatch(out.String())
	require.NotNil(t, m, "ready line: %q", out.String())
	resp, err := http.Get(m[2] + "/sim/stats")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	cc, err := grpc.NewClient(m[1], grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer cc.Close()
	info, err := vllmpb.NewVllmEngineClient(cc).GetServerInfo(ctx, &vllmpb.GetServerInfoRequest{})
	require.NoError(t, err)
	assert.Equal(t, "NixlConnector", info.GetKvConnector(), "one NIXL child: reported reduced")
	assert.Equal(t, "p", info.GetPairingProtocol())
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("smg-sim did not stop")
	}
}

func TestTokenSpeedNeedsGRPC(t *testing.T) {
	cmd := newCommand()
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs([]string{"--engine", "tokenspeed", "--role", "decode"})
	assert.ErrorContains(t, cmd.Execute(), "gRPC-only")
}

var moriioReadyLine = regexp.MustCompile(`^smg-sim vllm decode listening on http://127\.0\.0\.1:\d+ bootstrap=0 engine_id=e-2 moriio_handshake=([1-9]\d*) moriio_notify=([1-9]\d*)\n$`)

// The MoRI-IO flags: --kv-connector moriio with a mode and its two side-channel ports.
func TestRunMoRIIOPrintsItsSideChannel(t *testing.T) {
	cmd := newCommand()
	var out lockedBuffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--engine", "vllm", "--role", "decode", "--engine-id", "e-2", "--kv-connector", "moriio",
		"--moriio-mode", "read", "--moriio-handshake-port", "0", "--moriio-notify-port", "0"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.HasSuffix(out.String(), "\n") && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	m := moriioReadyLine.FindStringSubmatch(out.String())
	require.NotNil(t, m, "ready line: %q", out.String())
	assert.NotEqual(t, m[1], m[2])
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("run did not stop")
	}
}

// The cache and time flags reach both simulators' configs (gRPC: --block-size is the page
// size unless --page-size is given).
func TestCacheFlagsReachTheConfigs(t *testing.T) {
	var got sim.Config
	runFn = func(_ context.Context, c sim.Config, _ int, _ io.Writer) error { got = c; return nil }
	defer func() { runFn = run }()
	cmd := newCommand()
	cmd.SetArgs([]string{"--engine", "vllm", "--role", "decode", "--block-size", "4", "--kv-cache-blocks", "8",
		"--prefill-fixed-ms", "3", "--prefill-chunk-tokens", "512", "--kv-transfer-ms-per-block", "0.5",
		"--prefill-tokens-per-s", "1000", "--itl-per-running-ms", "2", "--tokenizer-path", "/tok"})
	require.NoError(t, cmd.Execute())
	assert.Equal(t, 4, got.BlockSize)
	assert.Equal(t, 8, got.KVCacheBlocks)
	assert.Equal(t, 3*time.Millisecond, got.PrefillFixed)
	assert.Equal(t, 512, got.PrefillChunkTokens)
	assert.Equal(t, 500*time.Microsecond, got.KVTransferPerBlock)
	assert.Equal(t, "/tok", got.TokenizerPath)

	g := grpcConfig(got, grpcFlags{})
	assert.Equal(t, 4, g.PageSize)
	assert.Equal(t, 8, g.KVCacheBlocks)
	assert.Equal(t, 3*time.Millisecond, g.PrefillFixed)
	assert.Equal(t, 512, g.PrefillChunkTokens)
	assert.Equal(t, 500*time.Microsecond, g.KVTransferPerBlock)
	assert.Equal(t, 1000.0, g.PrefillTokensPerS)
	assert.Equal(t, 2*time.Millisecond, g.ITLPerRunning)
	assert.Equal(t, got.MaxRunning, g.MaxRunning)
	assert.Equal(t, "/tok", g.TokenizerPath)
	assert.Equal(t, 32, grpcConfig(got, grpcFlags{pageSize: 32}).PageSize, "--page-size wins")
}

var kvEventsReadyLine = regexp.MustCompile(`engine_id=k-1 kv_events=(tcp://127\.0\.0\.1:\d+),(tcp://127\.0\.0\.1:\d+) kv_events_replay=(tcp://127\.0\.0\.1:\d+),(tcp://127\.0\.0\.1:\d+)\n$`)

// --kv-events-config (the engines' flag) starts one publisher per DP rank; the ready line
// names their PUB and replay endpoints. A config vLLM would refuse is an error.
func TestRunKVEventsPrintsTheEndpoints(t *testing.T) {
	cmd := newCommand()
	var out lockedBuffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--transport", "grpc", "--engine", "vllm", "--role", "decode", "--engine-id", "k-1",
		"--dp-size", "2", "--kv-events-array",
		"--kv-events-config", `{"enable_kv_cache_events":true,"endpoint":"tcp://*:0","replay_endpoint":"tcp://*:0","topic":"kv-events"}`})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.HasSuffix(out.String(), "\n") && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	m := kvEventsReadyLine.FindStringSubmatch(out.String())
	require.NotNil(t, m, "ready line: %q", out.String())
	assert.NotEqual(t, m[1], m[2], "each rank has its own PUB endpoint")
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("smg-sim did not stop")
	}

	cmd = newCommand()
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs([]string{"--engine", "vllm", "--role", "decode", "--kv-events-config", `{"enable_kv_cache_events":true,"hwm":"lots"}`})
	assert.ErrorContains(t, cmd.Execute(), "kv-events-config")
}
