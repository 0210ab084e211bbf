package cli

import (
	"github.com/spf13/pflag"

	"github.com/smg-go/smg/app/config"
)

// loadRoutingFlags registers the routing group's load and prefix flags (README flag table):
// least_load's assumptions, event-driven cache_aware on gRPC workers, and what
// power_of_two/least_load compare. add puts a flag in the current help group.
func loadRoutingFlags(fs *pflag.FlagSet, cfg *config.Config, add func(name string)) {
	fs.Float64Var(&cfg.LeastLoadDefaultThroughput, "least-load-default-throughput", cfg.LeastLoadDefaultThroughput, "least_load: assumed throughput (tokens/s) of workers without a load report")
	add("least-load-default-throughput")
	fs.IntVar(&cfg.LeastLoadMeanPrefillTokens, "least-load-mean-prefill-tokens", cfg.LeastLoadMeanPrefillTokens, "least_load: assumed prompt `tokens` per waiting request")
	add("least-load-mean-prefill-tokens")
	fs.IntVar(&cfg.LeastLoadMaxWaitingReqs, "least-load-max-waiting-requests", cfg.LeastLoadMaxWaitingReqs, "least_load: skip workers with this many waiting requests (0: off)")
	add("least-load-max-waiting-requests")
	fs.BoolVar(&cfg.KVEventsRouting, "kv-events-routing", cfg.KVEventsRouting, "cache_aware: route gRPC requests by the workers' own KV events (SubscribeKvEvents)")
	add("kv-events-routing")
	fs.Float64Var(&cfg.KVOverlapWeight, "kv-overlap-weight", cfg.KVOverlapWeight, "cache_aware with KV events: in-flight requests a whole-prefix match is worth")
	add("kv-overlap-weight")
	fs.Var(&secsValue{d: &cfg.KVSpeculativeTTL}, "kv-speculative-ttl-secs", "cache_aware with KV events: longest life of a just-routed prompt's speculative entry, ended early when the worker's events store it (0: none)")
	add("kv-speculative-ttl-secs")
	fs.IntVar(&cfg.KVIndexMaxBlocks, "kv-index-max-blocks", cfg.KVIndexMaxBlocks, "cache_aware with KV events: bound on the index's (worker, block) entries (0: the default, 1048576)")
	add("kv-index-max-blocks")
	fs.StringVar(&cfg.LoadMetric, "load-metric", cfg.LoadMetric, "power_of_two/least_load: compare in-flight `requests` or tokens (prompt + expected decode) per worker")
	add("load-metric")
}
