package app_test

import (
	"context"
	"net/http"
	"testing"

	"go.uber.org/fx"

	"github.com/smg-go/smg/app"
)

// BenchmarkStartToReady measures building the graph, starting it with no workers (the
// listener bound on a free port) and answering GET /liveness: the serverless cold-start path.
// Stop is outside the timed region.
func BenchmarkStartToReady(b *testing.B) {
	cfg := testConfig()
	ctx := context.Background()
	for b.Loop() {
		var srv *app.Server
		a := fx.New(app.Options(cfg, fx.Populate(&srv)))
		if err := a.Start(ctx); err != nil {
			b.Fatal(err)
		}
		resp, err := http.Get(srv.URL() + "/liveness")
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("liveness: %v %v", resp, err)
		}
		resp.Body.Close()
		b.StopTimer()
		if err := a.Stop(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
