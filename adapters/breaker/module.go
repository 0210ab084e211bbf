package breaker

import (
	"go.uber.org/fx"

	"github.com/smg-go/smg/ports"
)

type moduleIn struct {
	fx.In
	Settings Settings
	Store    ports.WorkerStore
	Metrics  Metrics `optional:"true"`
}

// Module provides the *Set built from the Settings the composition root supplies (it maps
// the --cb-* flags) and makes it follow the worker store (a breaker on every registered
// worker). The composition root exposes the Set as dispatch.OutcomeRecorder and supplies
// Metrics.
func Module() fx.Option {
	return fx.Module("breaker",
		fx.Provide(func(in moduleIn) *Set {
			s := NewSet(in.Settings, in.Metrics)
			s.Follow(in.Store)
			return s
		}),
		fx.Invoke(func(*Set) {}),
	)
}
