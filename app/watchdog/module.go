package watchdog

import (
	"context"
	"log/slog"

	"go.uber.org/fx"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/domain/progress"
	"github.com/smg-go/smg/ports"
)

// OptionsFrom maps --stall-timeout-secs, --stall-floor-secs and --canary-timeout-secs onto
// Options (a zero --stall-timeout-secs turns stall detection off).
func OptionsFrom(c config.Config, log *slog.Logger) Options {
	s := progress.DefaultSettings()
	if c.StallTimeout > 0 {
		s.Ceiling, s.Floor = c.StallTimeout, min(c.StallFloor, c.StallTimeout)
	}
	return Options{Stall: s, CanaryTimeout: c.CanaryTimeout, Disabled: c.StallTimeout <= 0, Logger: log}
}

type moduleIn struct {
	fx.In
	LC       fx.Lifecycle
	Config   config.Config
	Store    ports.WorkerStore
	Breakers Breakers     `optional:"true"`
	Log      *slog.Logger `optional:"true"`
}

// Module provides the *Watchdog and runs it from start to stop. The HTTP dispatcher and the
// gRPC pipeline wrap their engine clients with it.
func Module() fx.Option {
	return fx.Module("watchdog", fx.Provide(func(in moduleIn) *Watchdog {
		w := New(OptionsFrom(in.Config, in.Log), in.Store, in.Breakers)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		in.LC.Append(fx.Hook{
			OnStart: func(context.Context) error {
				go func() {
					defer close(done)
					w.Run(ctx)
				}()
				return nil
			},
			OnStop: func(context.Context) error {
				cancel()
				<-done
				w.Wait()
				return nil
			},
		})
		return w
	}))
}
