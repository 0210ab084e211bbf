package worker

// Queued returns the requests this gateway replica holds in the flow-control queue in front
// of the worker's decode admission window (app/admission); other replicas queue their own.
func (l *Live) Queued() int64 { return l.queued.Load() }

// AddQueued moves Queued by delta (+1 when a request is queued, -1 when it leaves).
func (l *Live) AddQueued(delta int64) { l.queued.Add(delta) }
