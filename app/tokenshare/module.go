package tokenshare

import (
	"context"
	"log/slog"
	"sync"

	"go.uber.org/fx"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/ports"
)

// Module runs a Syncer over ports.TokenBoard and ports.WorkerStore while the gateway runs,
// when --load-metric is tokens and --redis-url is set (otherwise no instance shares anything
// and nothing is started).
func Module() fx.Option {
	return fx.Module("tokenshare", fx.Invoke(func(in struct {
		fx.In
		LC      fx.Lifecycle
		Config  config.Config
		Board   ports.TokenBoard
		Workers ports.WorkerStore
		Log     *slog.Logger `optional:"true"`
	}) {
		if in.Config.LoadMetric != policy.LoadTokens || in.Config.RedisURL == "" {
			return
		}
		s := New(in.Board, in.Workers, Options{Logger: in.Log})
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		in.LC.Append(fx.Hook{
			OnStart: func(context.Context) error {
				wg.Go(func() { s.Run(ctx) })
				return nil
			},
			OnStop: func(context.Context) error {
				cancel()
				wg.Wait()
				return nil
			},
		})
	}))
}
