package sim

import (
	"bytes"
	"encoding/json"
	"net"
	"strconv"
	"strings"

	"github.com/smg-go/smg/domain/wire"
)

// bootTarget is one item's SGLang rendezvous: where the decode finds the prefill's
// bootstrap server and the room it claims there.
type bootTarget struct {
	host string
	port int
	room uint64
}

func (t bootTarget) addr() string {
	return net.JoinHostPort(strings.TrimSuffix(strings.TrimPrefix(t.host, "["), "]"), strconv.Itoa(t.port))
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// splitList returns the elements of a JSON list, or nil and false for a scalar.
func splitList(raw json.RawMessage) ([]json.RawMessage, bool, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '[' {
		return nil, false, nil
	}
	var l []json.RawMessage
	err := json.Unmarshal(raw, &l)
	return l, true, err
}

const maxRoom = 1<<63 - 1

func parseRoom(raw json.RawMessage) (uint64, bool) {
	v, err := strconv.ParseUint(string(bytes.TrimSpace(raw)), 10, 64)
	return v, err == nil && v <= maxRoom
}

// parseBootstrap reads bootstrap_host, bootstrap_port and bootstrap_room for n items, the way
// SGLang's GenerateReqInput normalizes them (io_struct.py): a scalar host or port applies to
// every item, a scalar room r becomes r, r+1, …; a list must have exactly n entries. A null
// port means the engine default 8998. Missing host or room is a 400, as in SGLang
// (engines.md §2.4 "Direct hit", §2.6 item 2).
func parseBootstrap(r *rawReq, n int) ([]bootTarget, *reqError) {
	if isNull(r.BootstrapRoom) || isNull(r.BootstrapHost) {
		return nil, badRequest("Disaggregated %s request requires %s and %s (got %s=%s, %s=%s)",
			"PD", wire.FieldBootstrapHost, wire.FieldBootstrapRoom,
			wire.FieldBootstrapHost, orNone(r.BootstrapHost), wire.FieldBootstrapRoom, orNone(r.BootstrapRoom))
	}
	ts := make([]bootTarget, n)
	// rooms
	l, isList, err := splitList(r.BootstrapRoom)
	if err != nil {
		return nil, badRequest("%s: %v", wire.FieldBootstrapRoom, err)
	}
	if isList {
		if len(l) != n {
			return nil, badRequest("%s has %d entries for a batch of %d", wire.FieldBootstrapRoom, len(l), n)
		}
		for i, e := range l {
			v, ok := parseRoom(e)
			if !ok {
				return nil, badRequest("%s[%d] must be an integer in [0, 2^63-1], got %s", wire.FieldBootstrapRoom, i, e)
			}
			ts[i].room = v
		}
	} else {
		v, ok := parseRoom(r.BootstrapRoom)
		if !ok {
			return nil, badRequest("%s must be an integer in [0, 2^63-1], got %s", wire.FieldBootstrapRoom, r.BootstrapRoom)
		}
		for i := range ts {
			ts[i].room = v + uint64(i)
		}
	}
	// hosts
	l, isList, err = splitList(r.BootstrapHost)
	if err != nil || (isList && len(l) != n) {
		return nil, badRequest("%s must be a string or a list of %d strings", wire.FieldBootstrapHost, n)
	}
	for i := range ts {
		e := r.BootstrapHost
		if isList {
			e = l[i]
		}
		if err := json.Unmarshal(e, &ts[i].host); err != nil || ts[i].host == "" {
			return nil, badRequest("%s must be a non-empty string, got %s", wire.FieldBootstrapHost, e)
		}
	}
	// ports
	l, isList, err = splitList(r.BootstrapPort)
	if err != nil || (isList && len(l) != n) {
		return nil, badRequest("%s must be an integer, null or a list of %d of them", wire.FieldBootstrapPort, n)
	}
	for i := range ts {
		e := r.BootstrapPort
		if isList {
			e = l[i]
		}
		ts[i].port = wire.DefaultBootstrapPort
		if isNull(e) {
			continue
		}
		p, err := strconv.Atoi(string(bytes.TrimSpace(e)))
		if err != nil || p < 1 || p > 65535 {
			return nil, badRequest("%s must be an integer port or null, got %s", wire.FieldBootstrapPort, e)
		}
		ts[i].port = p
	}
	return ts, nil
}

func orNone(raw json.RawMessage) string {
	if isNull(raw) {
		return "None"
	}
	return string(raw)
}
