package main_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// `smg demo --transport grpc` registers a gRPC fleet to ready from the servicers' server
// info (requests need the gRPC text pipeline, which this test does not exercise).
func TestDemoGRPCFleet(t *testing.T) {
	needBinaries(t)
	for _, engine := range []string{"sglang", "vllm", "tokenspeed"} {
		t.Run(engine, func(t *testing.T) {
			port := strconv.Itoa(freePort(t))
			cmd := exec.Command(filepath.Join(binDir, "smg"), "demo", "--transport", "grpc", "--engine", engine, "--port", port)
			stdout, err := cmd.StdoutPipe()
			require.NoError(t, err)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			require.NoError(t, cmd.Start())
			defer func() { _ = cmd.Process.Kill() }()

			banner := readUntil(t, stdout, "Press Ctrl-C to stop.", 20*time.Second, &stderr)
			go func() { _, _ = io.Copy(io.Discard, stdout) }()
			base := "http://127.0.0.1:" + port
			resp, err := http.Get(base + "/readiness")
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, http.StatusOK, resp.StatusCode)

			resp, err = http.Get(base + "/workers")
			require.NoError(t, err)
			var list struct {
				Workers []struct {
					workerInfo
					ConnectionMode string `json:"connection_mode"`
					PDPairing      string `json:"pd_pairing"`
				} `json:"workers"`
			}
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&list))
			resp.Body.Close()
			require.Len(t, list.Workers, 4)
			roles := map[string]int{}
			for _, w := range list.Workers {
				roles[w.WorkerType]++
				assert.True(t, w.IsHealthy, w.URL)
				assert.Equal(t, engine, w.RuntimeType, w.URL)
				assert.Equal(t, "grpc", w.ConnectionMode, w.URL)
				assert.True(t, strings.HasPrefix(w.PDPairing, engine+"/"), w.PDPairing)
				assert.True(t, strings.HasPrefix(w.URL, "grpc://127.0.0.1:"), w.URL)
				assert.Contains(t, banner, w.URL)
				if engine == "vllm" {
					assert.Equal(t, "NixlConnector", w.KVConnector, "reported by the servicer")
				}
			}
			assert.Equal(t, map[string]int{"prefill": 2, "decode": 2}, roles)

			children := childPIDs(cmd.Process.Pid)
			assert.Len(t, children, 4, "one smg-sim process per worker")
			require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
			assert.Equal(t, 0, waitExit(t, cmd), stderr.String())
			for _, pid := range children {
				assert.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "smg-sim pid %d outlived smg demo", pid)
			}
			for _, w := range list.Workers {
				_, err := net.DialTimeout("tcp", strings.TrimPrefix(w.URL, "grpc://"), time.Second)
				assert.Error(t, err, "%s still accepts connections", w.URL)
			}
		})
	}
}
