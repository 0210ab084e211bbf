package httpengine_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/smg-go/smg/adapters/engine/httpengine"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// BenchmarkSend measures one leg over loopback keep-alive: POST a 200-byte body, read a
// 300-byte JSON answer, close. The allocations are the client's plus the test server's.
func BenchmarkSend(b *testing.B) {
	answer := []byte(`{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" a b c d e f g h i j k l m n o p","logprobs":null,"finish_reason":"length"}],"usage":{"prompt_tokens":16,"completion_tokens":16,"total_tokens":32}}`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	}))
	defer srv.Close()
	c := httpengine.New(httpengine.Options{})
	defer c.CloseIdle()
	l := worker.NewLive(worker.Worker{URL: srv.URL}, worker.StatusReady)
	req := ports.LegRequest{Worker: l, Path: "/v1/completions",
		Body:   []byte(`{"model":"m","prompt":"the gateway must cost almost nothing compared with a client performing the same two leg handoff","max_tokens":16,"stream":false,"bootstrap_host":"127.0.0.1","bootstrap_port":8998,"bootstrap_room":1234567890}`),
		Header: http.Header{"X-Request-Id": {"rid-1"}}}
	buf := make([]byte, 4096)
	b.ReportAllocs()
	for b.Loop() {
		resp, err := c.Send(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := resp.Body.Read(buf); err != nil {
				break
			}
		}
		_ = resp.Body.Close()
	}
}
