package app_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/smg-go/smg/app"
)

func TestGraphStartsWithSharedTokenLoad(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.LoadMetric = "tokens"
	cfg.RedisURL = "redis://127.0.0.1:6379/0"
	cfg.RedisKeyPrefix = "smg-test-tokenshare:"
	fa := fxtest.New(t, app.Options(cfg))
	fa.RequireStart()
	fa.RequireStop()
}

func TestUnknownLoadMetricFailsStart(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.LoadMetric = "bytes"
	fa := fx.New(app.Options(cfg))
	err := fa.Start(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--load-metric")
}
