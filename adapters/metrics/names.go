package metrics

// Series names and label names (seed "Monitoring"; smg-spec.md §7.1, §7.3). They are public
// contracts: dashboards and the seed's PromQL queries use them verbatim.
const (
	NameTTFT                 = "smg_pd_ttft_seconds"
	NamePrefillDuration      = "smg_pd_prefill_duration_seconds"
	NameKVTransferDuration   = "smg_pd_kv_transfer_duration_seconds"
	NameKVConnectorMode      = "smg_pd_kv_connector_mode_total"
	NameKVTransferFailures   = "smg_pd_kv_transfer_failures_total"
	NameBootstrapFailures    = "smg_pd_bootstrap_failures_total"
	NameRecomputedPrompts    = "smg_pd_recomputed_prompts_total"
	NamePDDecisions          = "smg_pd_decisions_total"
	NameAdmissionWaits       = "smg_pd_admission_waits_total"
	NameAdmissionSheds       = "smg_pd_admission_sheds_total"
	NameWorkerSelection      = "smg_worker_selection_total"
	NameWorkerRequestsActive = "smg_worker_requests_active"
	NameWorkerHealth         = "smg_worker_health"
	NameWorkerHealthChecks   = "smg_worker_health_checks_total"

	LabelBackendType    = "backend_type"
	LabelModel          = "model"
	LabelRuntime        = "runtime"
	LabelMode           = "mode"
	LabelWorkerType     = "worker_type"
	LabelConnectionMode = "connection_mode"
	LabelPolicy         = "policy"
	LabelWorker         = "worker"
	LabelResult         = "result"
	LabelDecode         = "decode"
	LabelConnector      = "connector"
	LabelDecision       = "decision"
	LabelReason         = "reason"

	// BackendTypePD is the backend_type label value of every smg_pd_* histogram.
	BackendTypePD = "pd"
	// ModelOther replaces model label values beyond MaxModelLabels distinct ones.
	ModelOther = "other"
	// MaxModelLabels caps the distinct model label values (smg-spec.md §7).
	MaxModelLabels = 1024
)

// DurationBuckets are the histogram buckets, in seconds, of every *_duration_seconds and
// *_ttft_seconds series (smg-spec.md §7).
var DurationBuckets = []float64{
	0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30, 45, 60, 90, 120,
	180, 240, 300, 480, 900, 1200, 1800, 2700, 3600, 5400, 7200,
}
