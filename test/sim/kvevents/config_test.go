package kvevents_test

import (
	"strings"
	"testing"

	"github.com/smg-go/smg/test/sim/kvevents"
)

func TestParseConfig(t *testing.T) {
	t.Parallel()
	def := kvevents.DefaultConfig()
	cases := []struct {
		name, engine, value string
		want                kvevents.Config
		err                 string
	}{
		{name: "empty is vLLM's defaults, disabled", engine: "vllm", want: def},
		{name: "vLLM enable alone defaults the publisher to zmq", engine: "vllm",
			value: `{"enable_kv_cache_events":true,"topic":"kv-events"}`,
			want:  with(def, func(c *kvevents.Config) { c.EnableKVCacheEvents, c.Publisher, c.Topic = true, "zmq", "kv-events" })},
		{name: "vLLM zmq without enable publishes nothing", engine: "vllm", value: `{"publisher":"zmq"}`, want: def},
		{name: "vLLM enable with explicit null publisher stays null", engine: "vllm",
			value: `{"enable_kv_cache_events":true,"publisher":"null"}`,
			want:  with(def, func(c *kvevents.Config) { c.EnableKVCacheEvents = true })},
		{name: "vLLM every key", engine: "vllm",
			value: `{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:6000","replay_endpoint":"tcp://*:6001","buffer_steps":5,"hwm":7,"max_queue_size":9,"topic":"t"}`,
			want:  kvevents.Config{EnableKVCacheEvents: true, Publisher: "zmq", Endpoint: "tcp://*:6000", ReplayEndpoint: "tcp://*:6001", BufferSteps: 5, HWM: 7, MaxQueueSize: 9, Topic: "t"}},
		{name: "vLLM rejects an unknown key", engine: "vllm", value: `{"enable_kv_cache_events":true,"bufer_steps":5}`, err: "bufer_steps"},
		{name: "SGLang needs publisher zmq", engine: "sglang", value: `{"publisher":"zmq","endpoint":"tcp://*:5557"}`,
			want: with(def, func(c *kvevents.Config) { c.Publisher = "zmq" })},
		{name: "SGLang ignores enable_kv_cache_events like its pydantic model", engine: "sglang",
			value: `{"enable_kv_cache_events":true,"topic":"kv-events"}`,
			want:  with(def, func(c *kvevents.Config) { c.Topic = "kv-events" })},
		{name: "unknown publisher", engine: "vllm", value: `{"enable_kv_cache_events":true,"publisher":"kafka"}`, err: `publisher "kafka"`},
		{name: "negative size", engine: "sglang", value: `{"publisher":"zmq","hwm":-1}`, err: "hwm -1"},
		{name: "endpoint without port", engine: "vllm", value: `{"enable_kv_cache_events":true,"endpoint":"tcp://*"}`, err: "endpoint"},
		{name: "replay endpoint of another scheme", engine: "vllm", value: `{"enable_kv_cache_events":true,"replay_endpoint":"udp://*:1"}`, err: "replay_endpoint"},
		{name: "not JSON", engine: "vllm", value: `enable`, err: "kv-events-config"},
		{name: "unknown engine", engine: "trtllm", value: `{}`, err: "engine"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := kvevents.ParseConfig(tc.engine, tc.value)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one naming %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func with(c kvevents.Config, f func(*kvevents.Config)) kvevents.Config {
	f(&c)
	return c
}

func TestOffsetEndpoint(t *testing.T) {
	t.Parallel()
	cases := []struct {
		ep   string
		rank int
		want string
	}{
		{"tcp://*:5557", 0, "tcp://*:5557"},
		{"tcp://*:5557", 3, "tcp://*:5560"},
		{"tcp://10.0.0.1:5558", 1, "tcp://10.0.0.1:5559"},
		{"tcp://*:0", 2, "tcp://*:0"},
		{"inproc://cache", 2, "inproc://cache_dp2"},
		{"", 2, ""},
	}
	for _, tc := range cases {
		got, err := kvevents.OffsetEndpoint(tc.ep, tc.rank)
		if err != nil || got != tc.want {
			t.Errorf("OffsetEndpoint(%q, %d) = %q, %v; want %q", tc.ep, tc.rank, got, err, tc.want)
		}
	}
	if _, err := kvevents.OffsetEndpoint("ipc:///tmp/x", 1); err == nil {
		t.Error("ipc endpoint with a rank: want the engines' error")
	}
}
