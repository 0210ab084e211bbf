package ports

import "errors"

// Errors returned by stores.
var (
	// ErrNotFound: no such worker (or key).
	ErrNotFound = errors.New("not found")
	// ErrDuplicateURL: a worker with this URL is already registered.
	ErrDuplicateURL = errors.New("duplicate worker url")
)
