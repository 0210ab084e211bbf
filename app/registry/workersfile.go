package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/smg-go/smg/domain/errs"
)

// WorkersFilePoll is how often --workers-file is read for changes. Polling the content (not
// inotify) also sees a Kubernetes ConfigMap update, which swaps a symlink in the directory.
const WorkersFilePoll = time.Second

// ParseWorkersFile decodes a --workers-file: YAML or JSON (JSON is YAML), either a list of
// POST /workers bodies or an object whose "workers" key holds that list. Each entry is read
// exactly as a POST /workers body (ParseSpec: kv_connector, labels, health and all) and
// validated (Spec.Build); two entries with the same URL are an error. Errors name the entry
// (0-based) and are plain errors.
func ParseWorkersFile(b []byte) ([]Spec, error) {
	var doc any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("not YAML or JSON: %w", err)
	}
	if m, ok := doc.(map[string]any); ok {
		w, found := m["workers"]
		if !found {
			return nil, errors.New(`expected a list of workers or an object with a "workers" list`)
		}
		doc = w
	}
	if doc == nil {
		return nil, nil // an empty file: no workers
	}
	list, ok := doc.([]any)
	if !ok {
		return nil, errors.New(`expected a list of workers or an object with a "workers" list`)
	}
	specs := make([]Spec, 0, len(list))
	urls := map[string]int{}
	for i, e := range list {
		body, err := json.Marshal(e)
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, err)
		}
		spec, err := ParseSpec(body)
		if err != nil {
			return nil, fmt.Errorf("entry %d: %s", i, message(err))
		}
		w, err := spec.Build()
		if err != nil {
			return nil, fmt.Errorf("entry %d: %s", i, message(err))
		}
		if j, dup := urls[w.URL]; dup {
			return nil, fmt.Errorf("entry %d: url %s is already entry %d", i, w.DisplayURL(), j)
		}
		urls[w.URL] = i
		specs = append(specs, spec)
	}
	return specs, nil
}

// workersFile is the --workers-file state. Guarded by Service.fileMu.
type workersFile struct {
	last []byte   // the content last applied
	set  declared // the workers registered from the file
}

// ReloadWorkersFile reads --workers-file and makes the registry match it: entries not
// registered are registered (an entry whose URL is already registered, e.g. by another
// replica of a shared fleet, is adopted as the file's), edited entries are replaced (the old
// registration removed at once, the new one activated), and workers registered from an
// entry that is gone are removed as DELETE /workers removes them (draining). A file that
// cannot be read or has an invalid entry changes nothing and is returned as an error naming
// the flag. Without --workers-file it does nothing.
func (s *Service) ReloadWorkersFile(ctx context.Context) error {
	if s.cfg.WorkersFile == "" {
		return nil
	}
	s.fileMu.Lock()
	defer s.fileMu.Unlock()
	b, err := os.ReadFile(s.cfg.WorkersFile)
	if err != nil {
		return fmt.Errorf("--workers-file: %w", err)
	}
	return s.applyWorkersFile(ctx, b)
}

func (s *Service) applyWorkersFile(ctx context.Context, b []byte) error {
	s.file.last = b // a bad file is reported once per change, not on every poll
	specs, err := ParseWorkersFile(b)
	if err != nil {
		return fmt.Errorf("invalid --workers-file %s: %w", s.cfg.WorkersFile, err)
	}
	return s.applyDeclared(ctx, &s.file.set, specs)
}

// watchWorkersFile re-applies the workers file when its content changes (polled every
// WorkersFilePoll) and on every SIGHUP (even unchanged: it re-registers entries deleted
// through the admin API), until Close. Failures are logged; the registry keeps its workers.
func (s *Service) watchWorkersFile() {
	if s.cfg.WorkersFile == "" {
		return
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer signal.Stop(hup)
		t := time.NewTicker(WorkersFilePoll)
		defer t.Stop()
		for {
			force := false
			select {
			case <-s.ctx.Done():
				return
			case <-hup:
				force = true
			case <-t.C:
			}
			s.fileMu.Lock()
			b, err := os.ReadFile(s.cfg.WorkersFile)
			if err == nil && (force || !bytes.Equal(b, s.file.last)) {
				err = s.applyWorkersFile(s.ctx, b)
			}
			s.fileMu.Unlock()
			if err != nil {
				s.log.Error("workers file not applied; keeping the current workers", "file", s.cfg.WorkersFile, "error", err.Error())
			}
		}
	}()
}

// message is an error's text; for an *errs.Error its message alone.
func message(err error) string {
	if ee, ok := errs.As(err); ok {
		return ee.Message
	}
	return err.Error()
}
