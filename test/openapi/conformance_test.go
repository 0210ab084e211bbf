package openapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

// validator checks requests and answers against the committed OpenAPI 3.0 document (equal to
// the served one, adapters/api's drift test) with kin-openapi, routed at the gateway's URL.
type validator struct {
	doc    *openapi3.T
	router routers.Router
}

func newValidator(t *testing.T, gatewayURL string) *validator {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromFile(filepath.Join("..", "..", "openapi", "openapi-3.0.yaml"))
	require.NoError(t, err)
	require.NoError(t, doc.Validate(context.Background()), "the document is valid OpenAPI 3.0")
	doc.Servers = openapi3.Servers{{URL: gatewayURL}}
	r, err := legacy.NewRouter(doc)
	require.NoError(t, err)
	return &validator{doc: doc, router: r}
}

var filterOptions = &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true}

// exchange validates the request body against the document, sends it, and validates the
// answer: status, declared headers and the JSON body; a text/event-stream answer has each
// data event validated against the stream media type's schema. It returns the status and
// the number of events (0 for JSON).
func (v *validator) exchange(t *testing.T, g *fleet.Gateway, path string, body map[string]any) (int, int) {
	t.Helper()
	raw, err := json.Marshal(body)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), fleet.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.URL+path, bytes.NewReader(raw))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(wire.HeaderRequestID, "conformance-1")
	route, params, err := v.router.FindRoute(req)
	require.NoError(t, err, path)
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: filterOptions}
	require.NoError(t, openapi3filter.ValidateRequest(ctx, in), "%s: the request fits the document", path)
	req.Body = io.NopCloser(bytes.NewReader(raw))

	resp, err := g.Client.Do(req)
	require.NoError(t, err, path)
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	require.NoError(t, err)

	ct := resp.Header.Get("Content-Type")
	if !strings.HasPrefix(ct, "text/event-stream") {
		out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.StatusCode,
			Header: resp.Header, Options: filterOptions}
		out.SetBodyBytes(answer)
		assert.NoError(t, openapi3filter.ValidateResponse(ctx, out), "%s %d: the answer fits the document: %s", path, resp.StatusCode, answer)
		return resp.StatusCode, 0
	}
	media := route.Operation.Responses.Status(resp.StatusCode).Value.Content.Get("text/event-stream")
	require.NotNil(t, media, "%s: %d text/event-stream is documented", path, resp.StatusCode)
	events := 0
	sc := bufio.NewScanner(bytes.NewReader(answer))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data:")
		if !ok || strings.TrimSpace(data) == "[DONE]" {
			continue
		}
		var ev any
		require.NoError(t, json.Unmarshal([]byte(data), &ev), "%s event %q", path, data)
		assert.NoError(t, media.Schema.Value.VisitJSON(ev), "%s: event fits %s: %s", path, media.Schema.Ref, data)
		events++
	}
	require.NoError(t, sc.Err())
	return resp.StatusCode, events
}

// The simulated engines' answers, relayed by the gateway, fit the document on every
// inference route: plain JSON and each streamed event, for SGLang and vLLM fleets; so do
// the gateway's own errors (503 no_available_workers with X-SMG-Error-Code).
func TestAnswersFitTheDocument(t *testing.T) {
	t.Parallel()
	msgs := []map[string]any{{"role": "user", "content": "hello there"}}
	cases := []struct {
		path   string
		body   map[string]any
		stream bool
	}{
		{wire.PathChatCompletions, map[string]any{"model": "sim-model", "messages": msgs, "max_tokens": 3}, true},
		{wire.PathCompletions, map[string]any{"model": "sim-model", "prompt": "hello there", "max_tokens": 3}, true},
		{wire.PathMessages, map[string]any{"model": "sim-model", "messages": msgs, "max_tokens": 3}, true},
		{wire.PathResponses, map[string]any{"model": "sim-model", "input": "hello there", "max_output_tokens": 3, "store": false}, true},
		{wire.PathRerank, map[string]any{"model": "sim-model", "query": "q", "documents": []string{"a", "b"}}, false},
	}
	for _, engine := range []string{sim.EngineSGLang, sim.EngineVLLM} {
		f := fleet.Start(t, fleet.Spec{Engine: engine, Prefills: 1, Decodes: 1})
		v := newValidator(t, f.Gateway.URL)
		all := cases
		if engine == sim.EngineSGLang {
			all = append(all, struct {
				path   string
				body   map[string]any
				stream bool
			}{wire.PathGenerate, map[string]any{"text": "hello there", "sampling_params": map[string]any{"max_new_tokens": 3}}, true})
		}
		for _, c := range all {
			status, _ := v.exchange(t, f.Gateway, c.path, c.body)
			assert.Equal(t, http.StatusOK, status, "%s %s", engine, c.path)
			if c.stream {
				c.body["stream"] = true
				status, events := v.exchange(t, f.Gateway, c.path, c.body)
				assert.Equal(t, http.StatusOK, status, "%s %s stream", engine, c.path)
				assert.Positive(t, events, "%s %s stream has events", engine, c.path)
			}
		}
	}

	g := fleet.StartGateway(t, fleet.DefaultConfig())
	v := newValidator(t, g.URL)
	status, _ := v.exchange(t, g, wire.PathChatCompletions, map[string]any{"model": "sim-model", "messages": msgs})
	assert.Equal(t, http.StatusServiceUnavailable, status)
}
