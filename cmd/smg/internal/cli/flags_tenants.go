package cli

import (
	"github.com/spf13/pflag"

	"github.com/smg-go/smg/app/config"
)

// tenantFlags registers the tenant flags of the server group (README "Tenants"): the
// tenants file and the trusted tenant header. add puts a flag in the current help group.
func tenantFlags(fs *pflag.FlagSet, cfg *config.Config, add func(name string)) {
	fs.StringVar(&cfg.TenantsFile, "tenants-file", cfg.TenantsFile, "YAML `file` of tenants (name, priority, api_keys or api_key_sha256, limits); their keys pass the data plane as their tenant; re-read when it changes")
	add("tenants-file")
	fs.StringVar(&cfg.TenantHeader, "tenant-header", cfg.TenantHeader, "trusted request `header` naming the tenant, set by an authenticating proxy in front of the gateway (clients must not be able to set it)")
	add("tenant-header")
}
