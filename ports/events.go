package ports

// WorkerEvent kinds (WorkerEvent.Kind).
const (
	// EventAdded: a worker was registered.
	EventAdded = "added"
	// EventRemoved: a worker was unregistered.
	EventRemoved = "removed"
	// EventStatus: a registered worker's status changed (WorkerStore.SetStatus).
	EventStatus = "status"
)
