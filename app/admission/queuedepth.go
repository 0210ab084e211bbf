package admission

// QueuedOf counts the requests each of the named tenants has waiting in this replica's
// flow-control queues (every decode worker's), by tenant name; nil without a queue. It
// takes each worker queue's lock briefly.
func (a *Admitter) QueuedOf(names []string) map[string]int64 {
	if a.queues == nil {
		return nil
	}
	a.queues.mu.Lock()
	wqs := make([]*workerQueue, 0, len(a.queues.m))
	for _, wq := range a.queues.m {
		wqs = append(wqs, wq)
	}
	a.queues.mu.Unlock()
	out := make(map[string]int64, len(names))
	for _, name := range names {
		out[name] = 0 // every named tenant has an entry, also with no queue left
	}
	for _, wq := range wqs {
		wq.mu.Lock()
		for _, name := range names {
			out[name] += int64(wq.q.Depth(name))
		}
		wq.mu.Unlock()
	}
	return out
}
