package sim

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/test/sim/kvevents"
)

// SetFault adds a per-instance fault "<kind>[:<arg>]" to a running instance (as
// Config.Faults, e.g. "hang" to wedge it while /health stays OK). It returns ParseFault's
// error for a bad fault.
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
// (ClearFaults).
func (s *Server) serveFault(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodDelete {
		s.ClearFaults()
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if err := s.SetFault(r.URL.Query().Get("kind")); err != nil {
		b, _ := json.Marshal(map[string]string{"error": err.Error()})
		writeJSONStatus(w, http.StatusBadRequest, b)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// isCanary reports a gateway canary: its X-Request-Id or SGLang rid starts with
// wire.CanaryRequestIDPrefix.
func isCanary(r *http.Request, raw *rawReq) bool {
	if strings.HasPrefix(r.Header.Get(wire.HeaderRequestID), wire.CanaryRequestIDPrefix) {
		return true
	}
	return len(raw.Rid) > 1 && strings.HasPrefix(string(raw.Rid[1:]), wire.CanaryRequestIDPrefix)
}

// fakeBootstrap reports SGLang's warmup form: every target names wire.FakeBootstrapHost
// (sglang/srt/disaggregation/utils.py FAKE_BOOTSTRAP_HOST), so the leg runs without a peer.
func fakeBootstrap(ts []bootTarget) bool {
	for _, t := range ts {
		if t.host != wire.FakeBootstrapHost {
			return false
		}
	}
	return len(ts) > 0
}
