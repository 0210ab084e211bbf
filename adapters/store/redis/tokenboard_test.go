package redis_test

import (
	"testing"
	"time"

	"github.com/smg-go/smg/adapters/store/redis"
	"github.com/smg-go/smg/adapters/store/storetest"
	"github.com/smg-go/smg/ports"
)

func TestTokenBoardContract(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		storetest.RunTokenBoard(t, func(t *testing.T) ports.TokenBoard {
			c, p := b.client(t)
			return redis.NewTokenBoard(c, redis.Options{Prefix: p, OpTimeout: 2 * time.Second})
		})
	})
}
