// Package shared_test is the end-to-end suite of issue #8 (shared state across gateway
// instances): several real `smg` processes (built from cmd/smg in TestMain) share one Redis
// in front of simulated SGLang workers (test/sim), and the suite checks the shared decode
// admission window, lease expiry after an instance is killed, sticky routing keys across
// instances, and the documented behaviour while Redis is down (adapters/store/fallback.go).
//
// Redis: the server redistest finds (SMG_TEST_REDIS_URL, else 127.0.0.1:6379 as .ci/run
// provides, else a redis-server started for this binary). The gateway's key prefix is fixed
// ("smg:"), so each test takes a dedicated database number of that server and FLUSHDBs it
// first. The Redis-outage test starts a private redis-server on a free port instead, so it
// can kill it.
package shared_test

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/smg-go/smg/adapters/store/redis"
	"github.com/smg-go/smg/adapters/store/redis/redistest"
	"github.com/smg-go/smg/test/fleet"
)

// smgBin is the gateway binary built by TestMain.
var smgBin string

// TestMain builds cmd/smg into a temporary directory, routes go-redis's own log lines away
// from stderr (the outage test makes them noisy), runs the tests, stops a redis-server
// redistest may have started, and fails the package on leaked goroutines.
func TestMain(m *testing.M) {
	bin, cleanup, err := fleet.BuildSMG()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	smgBin = bin
	redis.RouteLogs(slog.New(slog.NewTextHandler(io.Discard, nil)))
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		redistest.Stop()
		cleanup()
		os.Exit(code)
	}))
}
