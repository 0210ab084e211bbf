package ports

import "context"

// FleetRecord is one worker registration in a fleet shared by gateway replicas: the
// worker's id (the same on every replica, so DELETE /workers/<id> works through any of
// them), its normalized URL (unique in the fleet) and the registration body (the POST
// /workers JSON, as accepted). Health, detection and status are not part of it: every
// replica probes and detects the worker itself.
type FleetRecord struct {
	// ID is the worker id (a UUID).
	ID string
	// URL is the normalized worker URL, unique within the fleet.
	URL string
	// Spec is the registration body, a JSON object.
	Spec []byte
	// Seq orders the records by registration (assigned by Put; larger is later).
	Seq int64
}

// FleetStore holds the registrations a set of gateway replicas share (--redis-url). Every
// change bumps a version, so a replica that missed a change notice sees the fleet differ on
// its next Version check and lists it again. All methods are safe for concurrent use; each
// is at most a couple of store round trips, bounded by the adapter's call timeout.
type FleetStore interface {
	// Put adds r (r.Seq is ignored and assigned). It fails with an error wrapping
	// ErrDuplicateURL (and returns the registered record's id) when a record with r.URL
	// exists under another id; a record already stored under r.ID and r.URL is not an error
	// (Put is idempotent, for retries after a lost answer).
	Put(ctx context.Context, r FleetRecord) (existingID string, err error)
	// Delete removes the record with id; an unknown id is not an error.
	Delete(ctx context.Context, id string) error
	// List returns the fleet's version and every record, in Seq order.
	List(ctx context.Context) (version int64, recs []FleetRecord, err error)
	// Version returns the fleet's version: it changes on every Put and Delete that changed
	// the fleet.
	Version(ctx context.Context) (int64, error)
	// Watch returns a channel that receives a value (coalesced, never blocking the sender)
	// after a change by any replica may have happened, and a function that stops the
	// watch. Notices are hints: they can be lost (e.g. while the store is unreachable), so
	// watchers also poll Version.
	Watch() (notices <-chan struct{}, stop func())
}
