package admission

// QueuesHeld is the number of per-worker flow queues a reaches for (tests: an emptied
// queue is dropped from the map).
func QueuesHeld(a *Admitter) int { return a.queues.size() }
