package ports

// DrainState tells the health API that the gateway is shutting down. Draining turns true
// when SIGTERM's drain starts and stays true: /readiness then answers 503 so that a load
// balancer withdraws the endpoint while new requests are still served. Called on every
// readiness probe; safe for concurrent use and cheap.
type DrainState interface {
	Draining() bool
}
