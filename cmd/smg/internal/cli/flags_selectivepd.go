package cli

import (
	"github.com/spf13/pflag"

	"github.com/smg-go/smg/app/config"
)

// selectivePDFlags registers the routing group's selective-disaggregation thresholds (README
// "Selective disaggregation"): when a request skips the prefill leg and is served by one
// worker that prefills locally. add puts a flag in the current help group.
func selectivePDFlags(fs *pflag.FlagSet, cfg *config.Config, add func(name string)) {
	s := &cfg.SelectivePD
	fs.IntVar(&s.UncachedTokens, "selective-pd-uncached-tokens", s.UncachedTokens, "serve a request decode-only when its uncached prompt `tokens` on the chosen kv_both vLLM decode or regular worker are at most this (0: off)")
	add("selective-pd-uncached-tokens")
	fs.IntVar(&s.PrefillBusyRequests, "selective-pd-prefill-busy-requests", s.PrefillBusyRequests, "serve a request decode-only when the least loaded prefill holds this many in-flight `requests` (0: off)")
	add("selective-pd-prefill-busy-requests")
	fs.IntVar(&s.DecodeMaxRequests, "selective-pd-decode-max-requests", s.DecodeMaxRequests, "no decode-only request for a worker holding this many in-flight `requests` (0: no guard)")
	add("selective-pd-decode-max-requests")
	fs.IntVar(&s.PrefillOnlyMaxTokens, "selective-pd-prefill-only-max-tokens", s.PrefillOnlyMaxTokens, "serve a request whose max_tokens is at most this many `tokens` whole on one kv_both vLLM prefill or regular worker, no decode leg (0: off)")
	add("selective-pd-prefill-only-max-tokens")
}
