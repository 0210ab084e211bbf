package health

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/smg-go/smg/domain/worker"
)

func TestRefreshWantedRules(t *testing.T) {
	t.Parallel()
	grpcPrefill := worker.Worker{Mode: worker.ConnGRPC, Role: worker.RolePrefill, KVConnector: "NixlConnector", KVEngineID: "e"}
	mk := func(w worker.Worker, confirmed bool) *worker.Live {
		l := worker.NewLive(w, worker.StatusReady)
		l.SetEngineIDConfirmed(confirmed)
		return l
	}
	noID := grpcPrefill
	noID.KVEngineID = ""
	httpW := grpcPrefill
	httpW.Mode = worker.ConnHTTP
	regular := grpcPrefill
	regular.Role = worker.RoleRegular
	noConn := grpcPrefill
	noConn.KVConnector = ""
	for _, c := range []struct {
		name     string
		l        *worker.Live
		launched worker.Status
		wantRead bool
	}{
		{"not_ready always", mk(grpcPrefill, true), worker.StatusNotReady, true},
		{"failed always", mk(grpcPrefill, true), worker.StatusFailed, true},
		{"pending with an id: no", mk(grpcPrefill, false), worker.StatusPending, false},
		{"pending without an id: yes", mk(noID, false), worker.StatusPending, true},
		{"ready confirmed: yes, on every interval (a restart keeps it healthy)", mk(grpcPrefill, true), worker.StatusReady, true},
		{"ready unconfirmed: yes", mk(grpcPrefill, false), worker.StatusReady, true},
		{"draining never", mk(grpcPrefill, false), worker.StatusDraining, false},
		{"HTTP never", mk(httpW, false), worker.StatusNotReady, false},
		{"regular never", mk(regular, false), worker.StatusNotReady, false},
		{"no kv_connector never", mk(noConn, false), worker.StatusNotReady, false},
	} {
		assert.Equal(t, c.wantRead, refreshWanted(c.l, c.launched), c.name)
	}
}
