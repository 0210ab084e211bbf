package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// startGRPCFleet starts 2 prefill + 2 decode gRPC simulators of engine (sglang, vllm or
// tokenspeed) on 127.0.0.1 with free ports, in parallel: `smg-sim --transport grpc`. Every
// prefill runs its KV side channel (bootstrap port); vLLM instances use the NIXL connector,
// which the servicer reports itself. If any fails, the others are stopped.
//
// tokenizer ("" = none) is the directory every simulator serves over GetTokenizer and reports
// as tokenizer_path, from which the gateway loads the model's text pipeline.
func startGRPCFleet(ctx context.Context, bin, engine, model, tokenizer string) (fleet, error) {
	roles := []string{"prefill", "prefill", "decode", "decode"}
	procs := make(fleet, len(roles))
	errs := make([]error, len(roles))
	var wg sync.WaitGroup
	for i, role := range roles {
		args := []string{"--transport", "grpc", "--engine", engine, "--role", role, "--host", "127.0.0.1",
			"--port", "0", "--stats-port", "0", "--model", model}
		if engine == "vllm" {
			args = append(args, "--kv-connector", "NixlConnector")
		}
		if tokenizer != "" {
			args = append(args, "--tokenizer-path", tokenizer)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			procs[i], errs[i] = startSim(bin, role, args, 10*time.Second)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil || ctx.Err() != nil {
		procs.Stop()
		if err == nil {
			err = ctx.Err()
		}
		return nil, err
	}
	return procs, nil
}

// registerGRPCFleet POSTs every gRPC simulator to /workers: url, worker_type and
// runtime_type, plus bootstrap_port for SGLang and TokenSpeed prefills. The gateway learns
// everything else (connector, layout, windows) from the servicers' server info.
func registerGRPCFleet(ctx context.Context, gateway, engine string, fl fleet) error {
	for _, p := range fl {
		body := map[string]any{"url": p.URL, "worker_type": p.Role, "runtime_type": engine}
		if engine != "vllm" && p.Role == "prefill" {
			body["bootstrap_port"] = p.BootstrapPort
		}
		b, _ := json.Marshal(body)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, gateway+"/workers", bytes.NewReader(b))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("register %s: %w", p.URL, err)
		}
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("register %s: %s: %s", p.URL, resp.Status, oneLine(string(msg)))
		}
	}
	return nil
}

func printGRPCBanner(out io.Writer, engine, base string, fl fleet, tokenizer string) {
	fmt.Fprintf(out, "smg demo: gateway on %s with a simulated %s gRPC fleet (smg-sim --transport grpc, model %q)\n\n", base, engine, demoModel)
	for _, p := range fl {
		extra := ""
		if p.BootstrapPort > 0 {
			extra = "  bootstrap_port " + strconv.Itoa(p.BootstrapPort)
		}
		fmt.Fprintf(out, "  %-7s  %s%s\n", p.Role, p.URL, extra)
	}
	fmt.Fprintf(out, `
Every worker registered from its engine's server info. Try:
%[2]s  curl -s %[1]s/workers | jq '.workers[] | {url, worker_type, runtime_type, connection_mode, status, pd_pairing}'
  curl -i %[1]s/readiness
  curl -s %[1]s/metrics | grep ^smg_

Press Ctrl-C to stop.
`, base, grpcChatExample(base, tokenizer))
}

// grpcChatExample is the README's chat curl when the simulators serve a tokenizer, else how
// to get one.
func grpcChatExample(base, tokenizer string) string {
	if tokenizer == "" {
		return "  (no chat or completions example: the simulators serve no tokenizer, see the NOTE above)\n"
	}
	return fmt.Sprintf(`  curl -s %s/v1/chat/completions -H 'Content-Type: application/json' \
    -d '{"model": "%s", "messages": [{"role": "user", "content": "Hello!"}], "max_tokens": 16}'
`, base, demoModel)
}
