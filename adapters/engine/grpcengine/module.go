package grpcengine

import (
	"context"

	"go.uber.org/fx"

	"github.com/smg-go/smg/ports"
)

// Module provides the gateway's *Pool (Options when supplied, else the seed's defaults)
// as itself and as ports.GRPCEngines, and closes its channels on stop.
func Module() fx.Option {
	return fx.Module("grpcengine",
		fx.Provide(
			func(p moduleParams, lc fx.Lifecycle) *Pool {
				var o Options
				if p.Options != nil {
					o = *p.Options
				}
				pool := New(o)
				lc.Append(fx.Hook{OnStop: func(context.Context) error { return pool.Close() }})
				return pool
			},
			func(p *Pool) ports.GRPCEngines { return p },
		),
	)
}

type moduleParams struct {
	fx.In
	Options *Options `optional:"true"`
}
