package api_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/smg-go/smg/adapters/api"
	"github.com/smg-go/smg/adapters/store/memory"
	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/app/registry"
)

func TestModuleRegistersTheOperationsOnTheProvidedAPI(t *testing.T) {
	t.Parallel()
	var mux *http.ServeMux
	app := fxtest.New(t,
		fx.NopLogger,
		fx.Supply(config.Default()), // for the registry
		fx.Supply(api.Options{Host: "127.0.0.1"}),
		fx.Provide(http.NewServeMux, api.NewHumaAPI),
		memory.Module(),
		registry.Module(),
		api.Module(),
		fx.Populate(&mux),
	)
	app.RequireStart()
	defer app.RequireStop()

	srv := httptest.NewServer(mux)
	defer srv.Close()
	r := do(t, http.MethodGet, srv.URL+"/workers", "")
	assert.Equal(t, http.StatusOK, r.status)
	assert.JSONEq(t, `{"workers":[],"total":0,"stats":{"prefill_count":0,"decode_count":0,"regular_count":0}}`, r.body)
	r = do(t, http.MethodGet, srv.URL+"/readiness", "")
	assert.Equal(t, http.StatusServiceUnavailable, r.status)
}
