package openapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/clients/go/smgclient"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

const testAPIKey = "sk-openapi-test"

func bearer(key string) smgclient.RequestEditorFn {
	return func(_ context.Context, req *http.Request) error {
		req.Header.Set("Authorization", "Bearer "+key)
		return nil
	}
}

func newClient(t *testing.T, g *fleet.Gateway, opts ...smgclient.ClientOption) *smgclient.ClientWithResponses {
	t.Helper()
	c, err := smgclient.NewClientWithResponses(g.URL, append([]smgclient.ClientOption{smgclient.WithHTTPClient(g.Client)}, opts...)...)
	require.NoError(t, err)
	return c
}

func chatRequest(t *testing.T, text string, maxTokens int64, stream bool) smgclient.ChatCompletionRequest {
	t.Helper()
	var content smgclient.ChatMessage_Content
	require.NoError(t, content.FromChatMessageContent0(text))
	return smgclient.ChatCompletionRequest{
		Model:     "sim-model",
		Messages:  []smgclient.ChatMessage{{Role: smgclient.ChatMessageRoleUser, Content: &content}},
		MaxTokens: &maxTokens,
		Stream:    &stream,
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), fleet.RequestTimeout)
	t.Cleanup(cancel)
	return ctx
}

// The generated client calls /v1/chat/completions through a PD pair: the typed answer
// parses, the request id it sent comes back, the routed-worker header
// names the decode worker, and exactly one prefill and one decode request were made.
func TestGeneratedClientChatCompletion(t *testing.T) {
	t.Parallel()
	f := fleet.Start(t, fleet.Spec{Engine: sim.EngineSGLang, Prefills: 1, Decodes: 1,
		Gateway: func(c *config.Config) { c.APIKey = testAPIKey }})
	c := newClient(t, f.Gateway, smgclient.WithRequestEditorFn(bearer(testAPIKey)))

	rid := smgclient.RequestId("openapi-client-1")
	resp, err := c.CreateChatCompletionWithResponse(ctxT(t), &smgclient.CreateChatCompletionParams{XRequestId: &rid},
		chatRequest(t, "hello from the generated client", 4, false))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode(), "%s", resp.Body)
	require.NotNil(t, resp.JSON200, "the 200 body parses as ChatCompletion: %s", resp.Body)
	cc := resp.JSON200
	assert.Equal(t, smgclient.ChatCompletionObjectChatCompletion, cc.Object)
	require.Len(t, cc.Choices, 1)
	require.NotNil(t, cc.Choices[0].Message.Content)
	assert.NotEmpty(t, *cc.Choices[0].Message.Content)
	require.NotNil(t, cc.Usage)
	assert.EqualValues(t, 4, cc.Usage.CompletionTokens)
	assert.Equal(t, string(rid), resp.HTTPResponse.Header.Get(wire.HeaderRequestID))

	workers, err := c.ListWorkersWithResponse(ctxT(t), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, workers.StatusCode(), "admin routes are open without --admin-api-key: %s", workers.Body)
	var decodeID string
	for _, w := range workers.JSON200.Workers {
		if w.WorkerType == smgclient.WorkerInfoWorkerTypeDecode {
			decodeID = w.Id.String()
		}
	}
	assert.Equal(t, decodeID, resp.HTTPResponse.Header.Get(wire.HeaderRoutedWorker))

	assert.EqualValues(t, 1, f.Prefills[0].Stats().Requests)
	assert.EqualValues(t, 1, f.Decodes[0].Stats().Requests)
}

// The stream variant answers text/event-stream whose data events parse as the document's
// ChatCompletionChunk and end with data: [DONE].
func TestGeneratedClientChatCompletionStream(t *testing.T) {
	t.Parallel()
	f := fleet.Start(t, fleet.Spec{Engine: sim.EngineSGLang, Prefills: 1, Decodes: 1})
	c := newClient(t, f.Gateway)
	resp, err := c.CreateChatCompletion(ctxT(t), nil, chatRequest(t, "stream please", 3, true))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"), resp.Header.Get("Content-Type"))

	var chunks []smgclient.ChatCompletionChunk
	done := false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			done = true
			break
		}
		var ch smgclient.ChatCompletionChunk
		require.NoError(t, json.Unmarshal([]byte(data), &ch), "event %q", data)
		chunks = append(chunks, ch)
	}
	require.NoError(t, sc.Err())
	assert.True(t, done, "the stream ends with data: [DONE]")
	require.NotEmpty(t, chunks)
	var text strings.Builder
	for _, ch := range chunks {
		assert.Equal(t, smgclient.ChatCompletionChunkObjectChatCompletionChunk, ch.Object)
		for _, choice := range ch.Choices {
			if choice.Delta.Content != nil {
				text.WriteString(*choice.Delta.Content)
			}
		}
	}
	assert.NotEmpty(t, text.String())
}

// Errors parse as the documented DataError (errs.Body) with the code in X-SMG-Error-Code:
// a missing --api-key is 401 invalid_api_key, an unknown model 404 model_not_found, and no
// reachable engine leg happened for either.
func TestGeneratedClientErrors(t *testing.T) {
	t.Parallel()
	f := fleet.Start(t, fleet.Spec{Engine: sim.EngineSGLang, Prefills: 1, Decodes: 1,
		Gateway: func(c *config.Config) { c.APIKey = testAPIKey }})
	c := newClient(t, f.Gateway)

	resp, err := c.CreateChatCompletionWithResponse(ctxT(t), nil, chatRequest(t, "no key", 2, false))
	require.NoError(t, err)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode())
	require.NotNil(t, resp.JSON401, "%s", resp.Body)
	assert.Equal(t, wire.CodeInvalidAPIKey, resp.JSON401.Error.Code)
	assert.Equal(t, "authentication_error", resp.JSON401.Error.Type)
	assert.Equal(t, wire.CodeInvalidAPIKey, resp.HTTPResponse.Header.Get(wire.HeaderErrorCode))

	req := chatRequest(t, "which model?", 2, false)
	req.Model = "no-such-model"
	resp, err = c.CreateChatCompletionWithResponse(ctxT(t), nil, req, bearer(testAPIKey))
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, resp.StatusCode(), "%s", resp.Body)
	require.NotNil(t, resp.JSON404, "%s", resp.Body)
	assert.Equal(t, wire.CodeModelNotFound, resp.JSON404.Error.Code)
	assert.Zero(t, fleet.SumStats(f.Sims()...).Requests, "no engine saw a refused request")
}

// The admin routes through the generated client, behind --admin-api-key: 401 WorkerError
// without the key; with it, POST /workers registers two simulators (202 AddAccepted),
// GET /workers lists them with the stats, and GET /workers/{id} returns one.
func TestGeneratedClientWorkers(t *testing.T) {
	t.Parallel()
	pre := fleet.StartSim(t, sim.Config{Engine: sim.EngineSGLang, Role: sim.RolePrefill})
	dec := fleet.StartSim(t, sim.Config{Engine: sim.EngineSGLang, Role: sim.RoleDecode})
	cfg := fleet.DefaultConfig()
	cfg.AdminAPIKey = "admin-openapi-test"
	g := fleet.StartGateway(t, cfg)
	anon := newClient(t, g)
	admin := newClient(t, g, smgclient.WithRequestEditorFn(bearer(cfg.AdminAPIKey)))

	denied, err := anon.ListWorkersWithResponse(ctxT(t), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusUnauthorized, denied.StatusCode())
	require.NotNil(t, denied.JSON401)
	assert.Equal(t, wire.CodeWorkerUnauthorized, denied.JSON401.Code)

	bp := int64(pre.BootstrapPort())
	ids := map[string]string{}
	for _, spec := range []smgclient.WorkerSpec{
		{Url: pre.URL(), WorkerType: ptr(smgclient.WorkerSpecWorkerTypePrefill), RuntimeType: ptr(smgclient.WorkerSpecRuntimeTypeSglang), BootstrapPort: &bp},
		{Url: dec.URL(), WorkerType: ptr(smgclient.WorkerSpecWorkerTypeDecode), RuntimeType: ptr(smgclient.WorkerSpecRuntimeTypeSglang)},
	} {
		added, err := admin.AddWorkerWithResponse(ctxT(t), spec)
		require.NoError(t, err)
		require.Equal(t, http.StatusAccepted, added.StatusCode(), "%s", added.Body)
		require.NotNil(t, added.JSON202)
		assert.Equal(t, spec.Url, added.JSON202.Url)
		ids[spec.Url] = added.JSON202.WorkerId.String()
	}
	dup, err := admin.AddWorkerWithResponse(ctxT(t), smgclient.WorkerSpec{Url: dec.URL(), WorkerType: ptr(smgclient.WorkerSpecWorkerTypeDecode)})
	require.NoError(t, err)
	require.Equal(t, http.StatusConflict, dup.StatusCode(), "%s", dup.Body)
	require.NotNil(t, dup.JSON409)
	assert.Equal(t, wire.CodeWorkerAlreadyExists, dup.JSON409.Code)

	var list *smgclient.WorkerList
	require.Eventually(t, func() bool {
		r, err := admin.ListWorkersWithResponse(ctxT(t), nil)
		if err != nil || r.JSON200 == nil || len(r.JSON200.Workers) != 2 {
			return false
		}
		for _, w := range r.JSON200.Workers {
			if !w.IsHealthy {
				return false
			}
		}
		list = r.JSON200
		return true
	}, fleet.ReadyTimeout, 20*time.Millisecond, "both workers registered and healthy")
	assert.EqualValues(t, 2, list.Total)
	assert.EqualValues(t, 1, list.Stats.PrefillCount)
	assert.EqualValues(t, 1, list.Stats.DecodeCount)

	one, err := admin.GetWorkerWithResponse(ctxT(t), ids[pre.URL()])
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, one.StatusCode(), "%s", one.Body)
	require.NotNil(t, one.JSON200)
	assert.Equal(t, pre.URL(), one.JSON200.Url)
	require.NotNil(t, one.JSON200.BootstrapPort)
	assert.EqualValues(t, bp, *one.JSON200.BootstrapPort)
}

func ptr[T any](v T) *T { return &v }
