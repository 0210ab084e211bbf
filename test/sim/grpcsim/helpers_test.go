package grpcsim_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/smg-go/smg/test/sim/grpcsim"
	"github.com/smg-go/smg/test/sim/kvevents"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction(kvevents.LeakedGoroutine))
}

const waitFor, tick = 5 * time.Second, 5 * time.Millisecond

func start(t *testing.T, cfg grpcsim.Config) *grpcsim.Server {
	t.Helper()
	s, err := grpcsim.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func dial(t *testing.T, s *grpcsim.Server) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(s.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func httpStats(t *testing.T, s *grpcsim.Server) grpcsim.Stats {
	t.Helper()
	resp, err := http.Get(s.StatsURL() + "/sim/stats")
	require.NoError(t, err)
	defer resp.Body.Close()
	var st grpcsim.Stats
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	return st
}

func prompt(n int) []uint32 {
	ids := make([]uint32, n)
	for i := range ids {
		ids[i] = uint32(100 + i)
	}
	return ids
}

func u32(v uint32) *uint32 { return &v }

func itoa(n int) string { return strconv.Itoa(n) }
