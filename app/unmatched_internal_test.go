package app

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/wire"
)

func TestUnmatchedAnswersInTheErrorShape(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	mux.HandleFunc("GET /workers/", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusAccepted) })
	h := unmatched(mux)
	cases := []struct {
		name, method, path string
		status             int
		code, allow        string
	}{
		{"unknown path", http.MethodPost, "/v1/nope", http.StatusNotFound, wire.CodeNotFound, ""},
		{"wrong method", http.MethodGet, "/v1/chat/completions", http.StatusMethodNotAllowed, wire.CodeMethodNotAllowed, "POST"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(c.method, c.path, nil))
			require.Equal(t, c.status, w.Code)
			assert.Equal(t, c.code, w.Header().Get(wire.HeaderErrorCode))
			assert.Equal(t, "application/json", w.Header().Get("Content-Type"))
			assert.Equal(t, c.allow, w.Header().Get("Allow"))
			var body struct {
				Error struct {
					Type, Code, Message string
					Param               *string
				}
			}
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body), w.Body.String())
			assert.Equal(t, c.code, body.Error.Code)
			assert.Equal(t, errs.Type(c.status), body.Error.Type)
			assert.Contains(t, body.Error.Message, c.path)
		})
	}
	t.Run("the worker API answers in its own shape", func(t *testing.T) {
		t.Parallel()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodPut, "/workers/x", nil))
		require.Equal(t, http.StatusMethodNotAllowed, w.Code)
		assert.Equal(t, "GET, HEAD", w.Header().Get("Allow"))
		assert.JSONEq(t, `{"error":"method PUT is not allowed on /workers/x (allowed: GET, HEAD)","code":"METHOD_NOT_ALLOWED"}`, w.Body.String())
	})
	t.Run("matched routes and redirects are the mux's", func(t *testing.T) {
		t.Parallel()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil))
		assert.Equal(t, http.StatusTeapot, w.Code)
		w = httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/workers", nil))
		assert.Equal(t, http.StatusTemporaryRedirect, w.Code, "the subtree redirect")
	})
}
