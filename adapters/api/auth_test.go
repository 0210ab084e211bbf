package api_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/smg-go/smg/adapters/api"
	"github.com/smg-go/smg/adapters/store/memory"
	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/app/registry"
)

// startupLog builds the api module for cfg (nothing listens) and returns what it logged.
func startupLog(t *testing.T, cfg config.Config) string {
	t.Helper()
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	opts := api.Options{Host: cfg.Host, AdminAPIKey: cfg.AdminAPIKey, APIKey: cfg.APIKey}
	app := fxtest.New(t, fx.NopLogger, fx.Supply(cfg), fx.Supply(opts), fx.Supply(log),
		fx.Provide(http.NewServeMux, api.NewHumaAPI), memory.Module(), registry.Module(), api.Module())
	app.RequireStart()
	app.RequireStop()
	return buf.String()
}

func TestStartupWarnsAboutAnOpenAdminAPIBeyondLoopback(t *testing.T) {
	t.Parallel()
	open := config.Default() // --host 0.0.0.0, no admin key
	assert.Contains(t, startupLog(t, open), "worker-management API")

	keyed := open
	keyed.AdminAPIKey = "k-0123456789"
	out := startupLog(t, keyed)
	assert.NotContains(t, out, "worker-management API")
	assert.NotContains(t, out, "k-0123456789", "the key is never logged")

	local := open
	local.Host = "127.0.0.1"
	assert.NotContains(t, startupLog(t, local), "worker-management API")
}

func TestIsLoopbackHost(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]bool{
		"127.0.0.1": true, "::1": true, "localhost": true, "127.1.2.3": true,
		"0.0.0.0": false, "::": false, "10.0.0.1": false, "gateway.internal": false,
	} {
		assert.Equal(t, want, api.IsLoopbackHost(host), host)
	}
}
