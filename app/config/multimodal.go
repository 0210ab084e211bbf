package config

// --mm-processing modes.
const (
	MMProcessingGateway = "gateway"
	MMProcessingWorker  = "worker"
)
