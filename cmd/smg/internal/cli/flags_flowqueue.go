package cli

import (
	"github.com/spf13/pflag"

	"github.com/smg-go/smg/app/config"
)

// flowQueueFlags registers the PD group's flow-control queue flags (README flag table): the
// bounded queue in front of each decode worker's admission window, for requests of tenants.
// add puts a flag in the current help group.
func flowQueueFlags(fs *pflag.FlagSet, cfg *config.Config, add func(name string)) {
	fs.IntVar(&cfg.FlowQueueSize, "flow-queue-size", cfg.FlowQueueSize, "requests of tenants queued per decode worker on this replica when its admission window is full, served by priority then fair share; a full queue evicts the lowest priority (0: no queue, tenants wait as --pd-admission-wait-secs says)")
	add("flow-queue-size")
	fs.Var(&secsValue{d: &cfg.FlowQueueWait}, "flow-queue-wait-secs", "deadline of a tenant's queued request: after it the request is shed with 503 and Retry-After (0 sheds at once)")
	add("flow-queue-wait-secs")
}
