package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// mainMux is the engine's HTTP surface (engines.md §2.6 item 1; smg-spec.md §11.8):
//
//	both:   POST /v1/chat/completions /v1/completions /v1/messages /v1/responses /v1/rerank
//	        GET /health /v1/models /metrics; GET /sim/stats, POST /sim/reset
//	SGLang: POST /generate /flush_cache; GET /get_server_info /server_info
//	        /get_model_info /model_info /health_generate
//	vLLM:   GET /version; POST /reset_prefix_cache; POST /sim/nixl/pull (NIXL side channel)
//
// /flush_cache and /reset_prefix_cache drop the KV cache's contents (AllBlocksCleared).
//
// Anything else is FastAPI's 404 {"detail":"Not Found"}.
func (s *Server) mainMux() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.inference(routeChat))
	mux.HandleFunc("POST /v1/completions", s.inference(routeCompletions))
	mux.HandleFunc("POST /v1/messages", s.inference(routeMessages))
	mux.HandleFunc("POST /v1/responses", s.inference(routeResponses))
	mux.HandleFunc("POST /v1/rerank", s.serveRerank)
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("GET /v1/models", s.serveModels)
	mux.HandleFunc("GET /metrics", s.serveMetrics)
	mux.HandleFunc("GET /sim/stats", func(w http.ResponseWriter, _ *http.Request) {
		b, _ := json.Marshal(s.Stats())
		writeJSONStatus(w, http.StatusOK, b)
	})
	mux.HandleFunc("POST /sim/reset", func(w http.ResponseWriter, _ *http.Request) {
		s.Reset()
		b, _ := json.Marshal(s.Stats())
		writeJSONStatus(w, http.StatusOK, b)
	})
	mux.HandleFunc("POST /sim/fault", s.serveFault)
	mux.HandleFunc("DELETE /sim/fault", s.serveFault)
	if s.cfg.Engine == EngineSGLang {
		mux.HandleFunc("POST /generate", s.inference(routeGenerate))
		mux.HandleFunc("GET /get_server_info", s.serveServerInfo)
		mux.HandleFunc("GET /server_info", s.serveServerInfo)
		mux.HandleFunc("GET /get_model_info", s.serveModelInfo)
		mux.HandleFunc("GET /model_info", s.serveModelInfo)
		mux.HandleFunc("GET /health_generate", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
		mux.HandleFunc("POST /flush_cache", func(w http.ResponseWriter, _ *http.Request) {
			s.FlushCache()
			_, _ = w.Write([]byte("Cache flushed.\n"))
		})
	} else {
		mux.HandleFunc("GET /version", func(w http.ResponseWriter, _ *http.Request) {
			writeJSONStatus(w, http.StatusOK, []byte(`{"version":"`+VLLMVersion+`"}`))
		})
		mux.HandleFunc("POST /reset_prefix_cache", func(w http.ResponseWriter, _ *http.Request) {
			s.FlushCache()
			w.WriteHeader(http.StatusOK)
		})
		if s.cfg.KVConnector == ConnectorNixl {
			mux.HandleFunc("POST /sim/nixl/pull", s.servePull)
		}
	}
	mux.HandleFunc("/", notFound)
	return mux
}

// bootMux is the bootstrap listener: GET /health ("OK"), GET /route (SGLang discovery,
// minimal) and the rendezvous endpoint of the connector (see sidechannel.go).
func (s *Server) bootMux() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("OK")) })
	mux.HandleFunc("GET /route", func(w http.ResponseWriter, _ *http.Request) {
		b, _ := json.Marshal(map[string]any{"rank_ip": s.cfg.Host, "rank_port": s.bootPort,
			"engine_rank": 0, "attn_tp_size": 1, "dp_size": 1, "pp_size": 1, "engine_id": s.cfg.EngineID})
		writeJSONStatus(w, http.StatusOK, b)
	})
	if s.cfg.Engine == EngineSGLang {
		mux.HandleFunc("GET /sim/sglang/rooms/{room}", s.serveRoom)
	} else {
		mux.HandleFunc("GET /sim/mooncake/transfers/{id}", s.serveTransfer)
	}
	mux.HandleFunc("/", notFound)
	return mux
}

func notFound(w http.ResponseWriter, _ *http.Request) {
	writeJSONStatus(w, http.StatusNotFound, []byte(`{"detail":"Not Found"}`))
}

func (s *Server) serveModels(w http.ResponseWriter, _ *http.Request) {
	owner := "sglang"
	if s.cfg.Engine == EngineVLLM {
		owner = "vllm"
	}
	b, _ := json.Marshal(map[string]any{"object": "list", "data": []map[string]any{{
		"id": s.cfg.Model, "object": "model", "created": time.Now().Unix(), "owned_by": owner,
		"root": s.cfg.Model, "parent": nil, "max_model_len": s.cfg.MaxModelLen,
	}}})
	writeJSONStatus(w, http.StatusOK, b)
}

// serveServerInfo is SGLang's /get_server_info (and /server_info): max_running_requests
// both at top level and in internal_states[0] (newer SGLang), disaggregation settings.
func (s *Server) serveServerInfo(w http.ResponseWriter, _ *http.Request) {
	bp := any(nil)
	if s.bootPort != 0 {
		bp = s.bootPort
	}
	b, _ := json.Marshal(map[string]any{
		"model_path": s.cfg.Model, "tokenizer_path": s.cfg.Model, "served_model_name": s.cfg.Model,
		"tp_size": 1, "dp_size": max(s.cfg.DPSize, 1), "pp_size": 1, "context_length": s.cfg.MaxModelLen,
		"max_running_requests": s.cfg.MaxRunningRequests, "max_total_num_tokens": s.cfg.KVCacheBlocks * s.cfg.BlockSize,
		"disaggregation_mode": s.cfg.Role, "disaggregation_bootstrap_port": bp,
		"disaggregation_transfer_backend": "mooncake", "page_size": s.cfg.BlockSize, "kv_cache_dtype": "auto",
		"attention_backend": "flashinfer", "version": SGLangVersion,
		"internal_states": []map[string]any{{"max_running_requests": s.cfg.MaxRunningRequests,
			"last_gen_throughput": 0.0}},
	})
	writeJSONStatus(w, http.StatusOK, b)
}

func (s *Server) serveModelInfo(w http.ResponseWriter, _ *http.Request) {
	b, _ := json.Marshal(map[string]any{"model_path": s.cfg.Model, "tokenizer_path": s.cfg.Model, "is_generation": true})
	writeJSONStatus(w, http.StatusOK, b)
}

// serveMetrics writes Prometheus text with the engine's own metric names (sglang:… or
// vllm:…), labelled model_name.
func (s *Server) serveMetrics(w http.ResponseWriter, _ *http.Request) {
	st := s.Stats()
	type m struct {
		name, kind string
		v          int64
	}
	var ms []m
	if s.cfg.Engine == EngineSGLang {
		ms = []m{{"sglang:num_running_reqs", "gauge", st.Running}, {"sglang:num_queue_reqs", "gauge", st.Waiting},
			{"sglang:prompt_tokens_total", "counter", st.PromptTokens}, {"sglang:generation_tokens_total", "counter", st.GenerationTokens}}
	} else {
		ms = []m{{"vllm:num_requests_running", "gauge", st.Running}, {"vllm:num_requests_waiting", "gauge", st.Waiting},
			{"vllm:prompt_tokens_total", "counter", st.PromptTokens}, {"vllm:generation_tokens_total", "counter", st.GenerationTokens}}
	}
	var b strings.Builder
	for _, x := range ms {
		fmt.Fprintf(&b, "# TYPE %s %s\n%s{model_name=%q} %d\n", x.name, x.kind, x.name, s.cfg.Model, x.v)
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	_, _ = w.Write([]byte(b.String()))
}
