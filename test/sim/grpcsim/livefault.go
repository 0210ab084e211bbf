package grpcsim

import (
	"net/http"

	"github.com/smg-go/smg/test/sim/kvevents"
)

// SetFault adds a per-instance fault "<kind>[:<arg>]" to a running instance (as
// Config.Faults, e.g. "hang" to wedge it while HealthCheck stays healthy). It returns
// ParseFault's error for a bad fault.
//
// The KV event faults (kvevents.FaultGap, FaultStall, FaultGarbage: "kv-events-gap",
// "kv-events-stall", "kv-events-garbage") go to every rank's event publisher instead;
// they are an error when the instance publishes no KV events.
func (s *Server) SetFault(spec string) error {
	if kvevents.IsFault(spec) {
		return s.kvev.SetFault(spec)
	}
	f, err := ParseFault(spec)
	if err != nil {
		return err
	}
	s.liveMu.Lock()
	defer s.liveMu.Unlock()
	s.live = append(append([]Fault(nil), s.live...), f)
	return nil
}

// ClearFaults removes the faults SetFault added, KV event faults included (Config.Faults
// stay).
func (s *Server) ClearFaults() {
	s.liveMu.Lock()
	s.live = nil
	s.liveMu.Unlock()
	s.kvev.ClearFaults()
}

func (s *Server) liveFaults() []Fault {
	s.liveMu.RLock()
	defer s.liveMu.RUnlock()
	return s.live
}

// serveFault is POST /sim/fault?kind=<kind>[:<arg>] (SetFault) and DELETE /sim/fault
// (ClearFaults), on the stats port.
func (s *Server) serveFault(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodDelete {
		s.ClearFaults()
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if err := s.SetFault(r.URL.Query().Get("kind")); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
