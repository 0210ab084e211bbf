package api_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/api"
	"github.com/smg-go/smg/domain/wire"
)

type oaRef struct {
	Ref string `json:"$ref"`
}

type oaMedia struct {
	Schema struct {
		Ref   string  `json:"$ref"`
		OneOf []oaRef `json:"oneOf"`
	} `json:"schema"`
}

type oaResponse struct {
	Ref     string             `json:"$ref"`
	Content map[string]oaMedia `json:"content"`
	Headers map[string]oaRef   `json:"headers"`
}

type oaOperation struct {
	OperationID string                `json:"operationId"`
	Security    []map[string][]string `json:"security"`
	Parameters  []oaRef               `json:"parameters"`
	RequestBody struct {
		Required bool               `json:"required"`
		Content  map[string]oaMedia `json:"content"`
	} `json:"requestBody"`
	Responses map[string]oaResponse `json:"responses"`
}

type oaDoc struct {
	Servers []struct {
		URL string `json:"url"`
	} `json:"servers"`
	Paths      map[string]map[string]oaOperation `json:"paths"`
	Components struct {
		Schemas map[string]struct {
			AdditionalProperties any `json:"additionalProperties"`
		} `json:"schemas"`
		Parameters map[string]struct {
			Name   string `json:"name"`
			In     string `json:"in"`
			Schema struct {
				Pattern   string `json:"pattern"`
				MaxLength int    `json:"maxLength"`
			} `json:"schema"`
		} `json:"parameters"`
		Responses map[string]oaResponse `json:"responses"`
	} `json:"components"`
}

func servedDoc(t *testing.T) oaDoc {
	t.Helper()
	srv, _ := newGateway(t, gatewayOptions{})
	resp, err := srv.Client().Get(srv.URL + "/openapi.json")
	require.NoError(t, err)
	defer resp.Body.Close()
	var d oaDoc
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&d))
	return d
}

// The inference operations are described with their request and response schemas (open to
// extra fields), the SSE variant on the streaming routes, the error responses in the
// data-plane body with Retry-After on 503 and 429, the request-id and routing-key headers,
// the API-key scheme, and a server.
func TestInferenceOperationsDocumented(t *testing.T) {
	t.Parallel()
	d := servedDoc(t)
	require.NotEmpty(t, d.Servers)
	assert.Equal(t, "/", d.Servers[0].URL, "a relative server: Try-It and clients use the origin that served the document")

	for _, c := range []struct {
		path, id, req, resp, stream string
	}{
		{"/v1/chat/completions", "create-chat-completion", "ChatCompletionRequest", "ChatCompletion", "ChatCompletionChunk"},
		{"/v1/completions", "create-completion", "CompletionRequest", "Completion", "Completion"},
		{"/generate", "generate", "GenerateRequest", "oneOf:GenerateResult", "GenerateResult"},
		{"/v1/messages", "create-message", "MessagesRequest", "Message", "MessageStreamEvent"},
		{"/v1/messages/count_tokens", "count-message-tokens", "CountTokensRequest", "CountTokensResponse", ""},
		{"/v1/responses", "create-response", "ResponsesRequest", "Response", "ResponseStreamEvent"},
		{"/v1/rerank", "rerank", "RerankRequest", "oneOf:RerankList", ""},
		{"/rerank", "rerank-legacy", "RerankRequest", "oneOf:RerankList", ""},
	} {
		op, ok := d.Paths[c.path]["post"]
		require.True(t, ok, "POST %s documented", c.path)
		assert.Equal(t, c.id, op.OperationID)
		assert.Equal(t, []map[string][]string{{api.SchemeData: {}}}, op.Security, c.path)
		assert.True(t, op.RequestBody.Required, c.path)
		assert.Equal(t, "#/components/schemas/"+c.req, op.RequestBody.Content["application/json"].Schema.Ref, c.path)
		ok200 := op.Responses["200"]
		body := ok200.Content["application/json"].Schema
		if one, ok := strings.CutPrefix(c.resp, "oneOf:"); ok {
			// One object, or an array (a batch on /generate, SGLang's rerank).
			require.Len(t, body.OneOf, 2, c.path)
			assert.Equal(t, "#/components/schemas/"+one, body.OneOf[0].Ref, c.path)
		} else {
			assert.Equal(t, "#/components/schemas/"+c.resp, body.Ref, c.path)
		}
		if c.stream != "" {
			assert.Equal(t, "#/components/schemas/"+c.stream, ok200.Content["text/event-stream"].Schema.Ref, c.path)
		} else {
			assert.NotContains(t, ok200.Content, "text/event-stream", c.path)
		}
		assert.Contains(t, ok200.Headers, "X-Request-Id", c.path)
		assert.Contains(t, ok200.Headers, "X-Smg-Routed-Worker-Id", c.path)
		assert.ElementsMatch(t, []oaRef{{Ref: "#/components/parameters/RequestId"}, {Ref: "#/components/parameters/RoutingKey"}}, op.Parameters, c.path)
		for _, status := range []string{"400", "401", "404", "413", "429", "500", "501", "502", "503", "504"} {
			assert.Equal(t, "#/components/responses/Error"+status, op.Responses[status].Ref, "%s %s", c.path, status)
		}
		assert.Equal(t, true, d.Components.Schemas[c.req].AdditionalProperties, "%s accepts extra fields", c.req)
	}

	assert.Equal(t, "X-Request-Id", d.Components.Parameters["RequestId"].Name)
	assert.Equal(t, "header", d.Components.Parameters["RequestId"].In)
	assert.Equal(t, "X-Smg-Routing-Key", d.Components.Parameters["RoutingKey"].Name)
	for status, retry := range map[string]bool{"400": false, "401": false, "429": true, "502": false, "503": true, "504": false} {
		r := d.Components.Responses["Error"+status]
		assert.Equal(t, "#/components/schemas/DataError", r.Content["application/json"].Schema.Ref, status)
		assert.Contains(t, r.Headers, "X-SMG-Error-Code", status)
		if retry {
			assert.Contains(t, r.Headers, "Retry-After", status)
		} else {
			assert.NotContains(t, r.Headers, "Retry-After", status)
		}
	}

	for path, method := range map[string]string{"/workers": "get", "/workers/{id}": "delete"} {
		assert.Equal(t, []map[string][]string{{api.SchemeAdmin: {}}}, d.Paths[path][method].Security, "%s %s", method, path)
	}
}

// The documented X-Request-Id pattern and length accept exactly what the gateway accepts
// (wire.ValidRequestID), so a generated client's validation and the gateway's agree.
func TestRequestIDParameterMatchesTheGatewayRule(t *testing.T) {
	t.Parallel()
	p := servedDoc(t).Components.Parameters["RequestId"].Schema
	rx := regexp.MustCompile(p.Pattern)
	for _, v := range []string{"", "abc", "A-Z_0.9:/+=@", "req 1", "a\"b", "é", "x\ny", "chatcmpl-" + strings.Repeat("a", 119),
		strings.Repeat("a", wire.MaxRequestIDLen), strings.Repeat("a", wire.MaxRequestIDLen+1), "a;b", "a,b"} {
		documented := rx.MatchString(v) && len(v) <= p.MaxLength
		assert.Equal(t, wire.ValidRequestID(v), documented, "%q", v)
	}
}
