package kvevents_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/kvevents"
	"github.com/smg-go/smg/domain/kvindex"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

func TestResolveZMQ(t *testing.T) {
	t.Parallel()
	rank := func(r int) *int { return &r }
	cases := []struct {
		name string
		w    worker.Worker
		want kvevents.Endpoints
		ok   bool
	}{
		{"no label, no subscription", worker.Worker{URL: "http://d0:8000"}, kvevents.Endpoints{}, false},
		{"endpoint, replay and topic as labelled",
			worker.Worker{URL: "http://d0:8000", Labels: map[string]string{"kv_events_endpoint": "tcp://decode-0:5557",
				"kv_events_replay_endpoint": "tcp://decode-0:5558", "kv_events_topic": "kv-events"}},
			kvevents.Endpoints{Endpoint: "tcp://decode-0:5557", ReplayEndpoint: "tcp://decode-0:5558", Topic: "kv-events"}, true},
		{"DP rank r publishes on port + r",
			worker.Worker{URL: "http://d0:8000@2", DPRank: rank(2), Labels: map[string]string{"kv_events_endpoint": "tcp://decode-0:5557",
				"kv_events_replay_endpoint": "tcp://decode-0:5600"}},
			kvevents.Endpoints{Endpoint: "tcp://decode-0:5559", ReplayEndpoint: "tcp://decode-0:5602"}, true},
		{"a bind wildcard becomes the worker's host",
			worker.Worker{URL: "http://10.0.0.7:8000", Labels: map[string]string{"kv_events_endpoint": "tcp://*:5557"}},
			kvevents.Endpoints{Endpoint: "tcp://10.0.0.7:5557"}, true},
		{"IPv6 worker host",
			worker.Worker{URL: "http://[fd00::1]:8000", Labels: map[string]string{"kv_events_endpoint": "tcp://0.0.0.0:5557"}},
			kvevents.Endpoints{Endpoint: "tcp://[fd00::1]:5557"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, ok, err := kvevents.ResolveZMQ(c.w)
			require.NoError(t, err)
			assert.Equal(t, c.ok, ok)
			assert.Equal(t, c.want, got)
		})
	}
	_, _, err := kvevents.ResolveZMQ(worker.Worker{URL: "http://d:1", Labels: map[string]string{"kv_events_endpoint": "tcp://decode-0"}})
	assert.Error(t, err, "a tcp endpoint needs a port")
}

func TestOffsetPort(t *testing.T) {
	t.Parallel()
	for in, want := range map[[2]any]string{
		{"tcp://h:5557", 0}:  "tcp://h:5557",
		{"tcp://h:5557", 3}:  "tcp://h:5560",
		{"inproc://kv", 0}:   "inproc://kv",
		{"inproc://kv", 1}:   "inproc://kv_dp1",
		{"ipc:///tmp/kv", 0}: "ipc:///tmp/kv",
	} {
		got, err := kvevents.OffsetPort(in[0].(string), in[1].(int))
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range [][2]any{{"tcp://h:65535", 1}, {"tcp://h:x", 0}, {"ipc:///tmp/kv", 1}, {"tcp://h:1", -1}} {
		_, err := kvevents.OffsetPort(bad[0].(string), bad[1].(int))
		assert.Error(t, err, bad)
	}
}

func TestLabelsFromAnnotations(t *testing.T) {
	t.Parallel()
	got := kvevents.LabelsFromAnnotations(map[string]string{
		"smg.ai/kv-events-endpoint":        "tcp://p:5557",
		"smg.ai/kv-events-replay-endpoint": " tcp://p:5558 ",
		"smg.ai/kv-connector":              "NixlConnector",
	})
	assert.Equal(t, map[string]string{"kv_events_endpoint": "tcp://p:5557", "kv_events_replay_endpoint": "tcp://p:5558"}, got)
}

var _ ports.KVEventSink = kvindex.WorkerSink{}
