package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"
)

// declared is a set of workers a source declares in full (the workers file, service
// discovery): applying the source's current list registers what is new, replaces what was
// edited and removes what is gone, leaving every other registration alone.
type declared struct {
	// name is the source in errors and logs, e.g. "--workers-file".
	name string
	// adopt: an entry whose URL is already registered becomes the source's (the workers
	// file); otherwise such a registration is left alone and the entry skipped (discovery
	// never touches workers added by hand).
	adopt bool
	// private: the workers are this replica's own and never written to a shared fleet
	// (discovery: every replica watches the API server itself).
	private bool
	owned   map[string]declaredEntry // normalized URL -> the worker registered for it
}

// declaredEntry is a worker registered from a declared set: its id and its body (canonical
// JSON, to see an edited entry).
type declaredEntry struct {
	id   string
	body string
}

// DeclaredResult counts what one apply of a declared set did.
type DeclaredResult struct {
	// Registered and Failed count the entries registered and refused; Removed the workers
	// removed because their entry was gone.
	Registered, Failed, Removed int
}

// applyDeclared makes the registry match specs for the source d (see declared). Entries
// that cannot be registered are reported together; the others are applied. Callers
// serialize calls per source.
func (s *Service) applyDeclared(ctx context.Context, d *declared, specs []Spec) error {
	_, err := s.applyDeclaredCount(ctx, d, specs)
	return err
}

func (s *Service) applyDeclaredCount(ctx context.Context, d *declared, specs []Spec) (DeclaredResult, error) {
	if d.owned == nil {
		d.owned = map[string]declaredEntry{}
	}
	seen := map[string]bool{}
	var problems []error
	added, removed := 0, 0
	for i, spec := range specs {
		w, err := s.prepare(ctx, spec, false)
		if err != nil {
			problems = append(problems, fmt.Errorf("%s entry %d: %s", d.name, i, message(err)))
			continue
		}
		canon, _ := json.Marshal(spec)
		body := string(canon)
		seen[w.URL] = true

		s.mu.Lock()
		if e, owned := d.owned[w.URL]; owned {
			cur, err := s.store.Get(e.id)
			if err == nil && e.body == body {
				s.mu.Unlock()
				continue
			}
			if err == nil {
				s.unpublishLocked(ctx, cur.ID)
				s.dropLocked(cur) // edited: the new registration replaces it at once
			}
			delete(d.owned, w.URL)
		} else if cur, err := s.lookupURL(w.URL); err == nil {
			if d.adopt {
				d.owned[w.URL] = declaredEntry{id: s.registrationID(cur), body: body}
			}
			s.mu.Unlock()
			continue
		}
		id := uuid.NewString()
		if d.private {
			s.private[id] = true
		}
		acc, err := s.addLocked(ctx, spec, w, id, true)
		if err != nil {
			delete(s.private, id)
			s.mu.Unlock()
			problems = append(problems, fmt.Errorf("%s entry %d: %s", d.name, i, message(err)))
			continue
		}
		d.owned[w.URL] = declaredEntry{id: acc.WorkerID, body: body}
		s.mu.Unlock()
		added++
	}
	for url, e := range d.owned {
		if seen[url] {
			continue
		}
		delete(d.owned, url)
		s.mu.Lock()
		if l, err := s.store.Get(e.id); err == nil {
			if !d.private {
				s.unpublishLocked(ctx, e.id)
			}
			s.removeLocked(l)
			removed++
		}
		delete(s.private, e.id)
		s.mu.Unlock()
	}
	if added+removed > 0 {
		s.log.Info("declared workers applied", "source", d.name, "entries", len(specs), "registered", added, "removed", removed)
	}
	return DeclaredResult{Registered: added, Failed: len(problems), Removed: removed}, errors.Join(problems...)
}

// SyncDiscovered makes the workers service discovery registered match specs, its whole
// desired set: new entries are registered, edited ones replaced, missing ones removed as
// DELETE removes them (draining). A URL registered otherwise (flags, admin API, workers
// file, the shared fleet) is left alone. Discovered workers are this replica's own: they are
// not written to a shared fleet, since every replica watches the API server itself.
// Entries that cannot be registered are returned together; the others are applied. The
// result counts what changed.
func (s *Service) SyncDiscovered(ctx context.Context, specs []Spec) (DeclaredResult, error) {
	s.discMu.Lock()
	defer s.discMu.Unlock()
	return s.applyDeclaredCount(ctx, &s.disc, specs)
}
