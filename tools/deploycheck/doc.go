// Package deploycheck validates smg's deployable artefacts offline, as tests run by
// `make deploy-check` (from this directory: go test ./...). It is its own module so the
// Knative and Kubernetes libraries it needs stay out of the gateway's go.mod.
//
//   - deploy/cloudrun/service.yaml: strict decode into Knative Serving's Service, then the
//     admission webhook's own SetDefaults + Validate (knative.dev/serving v0.42.2) with
//     Cloud Run's limits (3600 s max timeout).
//   - Shutdown budgets: every platform's kill deadline leaves room for the gateway's drain
//     (--shutdown-drain-delay-secs + --shutdown-grace-period-secs, README "Shutdown"),
//     Compose's stop_grace_period included (deploy/compose/compose.yaml, loaded with compose-go).
package deploycheck
