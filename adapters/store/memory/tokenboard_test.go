package memory_test

import (
	"testing"

	"github.com/smg-go/smg/adapters/store/memory"
	"github.com/smg-go/smg/adapters/store/storetest"
	"github.com/smg-go/smg/ports"
)

func TestTokenBoardContract(t *testing.T) {
	t.Parallel()
	storetest.RunTokenBoard(t, func(*testing.T) ports.TokenBoard { return memory.NewTokenBoard(nil) })
}
