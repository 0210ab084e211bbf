package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
)

// Engine metadata routes read during registration (smg-spec.md §3.2 steps 3-4;
// engines.md §2.6 for SGLang's /get_server_info).
const (
	pathModels        = "/v1/models"
	pathVersion       = "/version"
	pathServerInfo    = "/server_info"
	pathGetServerInfo = "/get_server_info"
	maxMetadataBytes  = 4 << 20
)

// serverInfoLabels are the SGLang /server_info keys copied into labels: capacity hints and
// the facts pairing compares (seed "Prefill/Decode Pairing"). Only scalar values are copied.
var serverInfoLabels = []string{
	wire.LabelMaxRunningRequests, "max_total_num_tokens", "context_length",
	wire.LabelTPSize, wire.LabelDPSize, "pp_size", wire.LabelPageSize, wire.LabelKVCacheDtype,
	wire.LabelAttentionBackend, "disaggregation_mode", wire.LabelTransferBackend,
	"load_balance_method", wire.LabelVersion, "model_path", "tokenizer_path", "served_model_name",
}

// modelList is the OpenAI GET /v1/models answer, with vLLM's extra keys.
type modelList struct {
	Data []struct {
		ID          string `json:"id"`
		OwnedBy     string `json:"owned_by"`
		Root        string `json:"root"`
		MaxModelLen *int64 `json:"max_model_len"`
	} `json:"data"`
}

// detect fills what an HTTP worker can tell about itself: the runtime when unspecified, the
// model ids when none were given, and metadata labels. Registered labels win over discovered
// ones. Every probe is bounded by timeout; a probe that fails leaves its part undetected, and
// an undetected runtime becomes sglang (smg-spec.md §3.2 step 3, §1.4).
func (s *Service) detect(ctx context.Context, w worker.Worker, timeout time.Duration) worker.Worker {
	if w.Mode != worker.ConnHTTP {
		if w.Runtime == worker.RuntimeUnspecified {
			w.Runtime = worker.RuntimeSGLang
		}
		return w
	}
	found := map[string]string{}

	var models modelList
	modelsLive := s.getJSON(ctx, w, pathModels, timeout, &models) == nil
	ownedBy := ""
	if modelsLive && len(models.Data) > 0 {
		ownedBy = strings.ToLower(models.Data[0].OwnedBy)
	}

	var version struct {
		Version string `json:"version"`
	}
	var info map[string]any // SGLang /server_info
	versionDone := false
	if w.Runtime == worker.RuntimeUnspecified {
		switch ownedBy {
		case "sglang", "nvidia":
			w.Runtime = worker.RuntimeSGLang
		case "vllm":
			w.Runtime = worker.RuntimeVLLM
		default:
			// /version only exists on vLLM, /server_info only on SGLang: ask both at once.
			var wg sync.WaitGroup
			var vErr, sErr error
			wg.Add(2)
			go func() { defer wg.Done(); vErr = s.getJSON(ctx, w, pathVersion, timeout, &version) }()
			go func() { defer wg.Done(); sErr = s.getJSON(ctx, w, pathServerInfo, timeout, &info) }()
			wg.Wait()
			versionDone = true
			switch {
			case vErr == nil:
				w.Runtime = worker.RuntimeVLLM
			case sErr == nil:
				w.Runtime = worker.RuntimeSGLang
			case modelsLive:
				w.Runtime = worker.RuntimeGeneric
			default:
				w.Runtime = worker.RuntimeSGLang
			}
		}
	}

	switch w.Runtime {
	case worker.RuntimeVLLM:
		if len(models.Data) > 0 {
			m := models.Data[0]
			setIf(found, "served_model_name", m.ID)
			setIf(found, "model_path", m.Root)
			if m.MaxModelLen != nil {
				found["max_model_len"] = strconv.FormatInt(*m.MaxModelLen, 10)
			}
		}
		if !versionDone {
			_ = s.getJSON(ctx, w, pathVersion, timeout, &version)
		}
		setIf(found, wire.LabelVersion, version.Version)
	case worker.RuntimeSGLang:
		if info == nil && s.getJSON(ctx, w, pathServerInfo, timeout, &info) != nil {
			info = nil
			_ = s.getJSON(ctx, w, pathGetServerInfo, timeout, &info)
		}
		for _, k := range serverInfoLabels {
			if v, ok := scalar(info[k]); ok {
				found[k] = v
			}
		}
		// Newer SGLang reports the effective window per scheduler in internal_states.
		if _, ok := found[wire.LabelMaxRunningRequests]; !ok {
			if states, _ := info["internal_states"].([]any); len(states) > 0 {
				if st, _ := states[0].(map[string]any); st != nil {
					if v, ok := scalar(st[wire.LabelMaxRunningRequests]); ok {
						found[wire.LabelMaxRunningRequests] = v
					}
				}
			}
		}
	}

	if len(w.Models) == 0 {
		seen := map[string]bool{}
		for _, m := range models.Data {
			if m.ID != "" && !seen[m.ID] {
				seen[m.ID] = true
				w.Models = append(w.Models, m.ID)
			}
		}
	}
	if len(found) > 0 {
		merged := make(map[string]string, len(found)+len(w.Labels))
		for k, v := range found {
			merged[k] = v
		}
		for k, v := range w.Labels {
			merged[k] = v
		}
		w.Labels = merged
	}
	return w
}

// getJSON GETs base+path and decodes a 2xx JSON answer into out (nil = only check the
// status). It returns an error for transport failures, non-2xx and undecodable bodies.
func (s *Service) getJSON(ctx context.Context, w worker.Worker, path string, timeout time.Duration, out any) error {
	release, err := s.probes.acquire(ctx)
	if err != nil {
		return err
	}
	defer release()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.BaseURL()+path, nil)
	if err != nil {
		return err
	}
	if w.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+w.APIKey)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadataBytes))
	if err != nil {
		return err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("GET %s: status %d", path, resp.StatusCode)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(body, out)
}

func setIf(m map[string]string, k, v string) {
	if v != "" {
		m[k] = v
	}
}

// scalar renders a JSON scalar as a label value: strings as is, numbers without exponent,
// booleans as "true"/"false". Empty strings, nulls, arrays and objects are skipped.
func scalar(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, x != ""
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}
