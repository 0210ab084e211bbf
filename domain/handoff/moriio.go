package handoff

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/jsonbody"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
)

// IsMoRIIO reports whether w is a vLLM MoRIIOConnector worker (its kv_connector field, else
// the kv_connector label). The seed takes the MoRI-IO path whenever a leg is one.
func IsMoRIIO(w worker.Worker) bool { return connectorName(w) == wire.ConnectorMoRIIO }

// MoRIIOSide is one worker's MoRI-IO settings, read from its labels (seed "MoRI-IO (HTTP)"
// label table): they match the engine's kv_connector_extra_config.
type MoRIIOSide struct {
	// Mode is "read" or "write" (moriio_mode, required).
	Mode string
	// Host is where the peer engine reaches this worker's side channel (moriio_host, else
	// the worker URL's host; IPv6 in brackets).
	Host string
	// HandshakePort and NotifyPort are the engine's handshake_port and notify_port
	// (defaults 6301 and 61005).
	HandshakePort, NotifyPort int
	// Concurrent is moriio_write_dispatch "concurrent" (default "sequential").
	Concurrent bool
	// TPSize is the tp_size label, 0 when unset.
	TPSize int
}

// ReadMoRIIOSide reads w's MoRI-IO labels. The error is the reason the worker cannot serve
// a MoRI-IO leg (for the gateway log): not a MoRIIOConnector worker, DP > 1, a missing
// moriio_mode, or a label that does not parse.
func ReadMoRIIOSide(w worker.Worker) (MoRIIOSide, error) {
	var s MoRIIOSide
	if !IsMoRIIO(w) {
		return s, fmt.Errorf("worker %s is not a %s worker (kv_connector %q)", w.URL, wire.ConnectorMoRIIO, connectorName(w))
	}
	dp := 1
	if w.DPSize != nil {
		dp = *w.DPSize
	} else if v, ok := w.Labels[wire.LabelDPSize]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return s, fmt.Errorf("worker %s: label %s=%q is not a positive integer", w.URL, wire.LabelDPSize, v)
		}
		dp = n
	}
	if dp > 1 {
		return s, fmt.Errorf("worker %s has DP size %d; MoRI-IO over HTTP needs DP 1", w.URL, dp)
	}
	switch m, ok := w.Labels[wire.LabelMoRIIOMode]; {
	case !ok:
		return s, fmt.Errorf("worker %s has no %s label (read or write)", w.URL, wire.LabelMoRIIOMode)
	case m == wire.MoRIIOModeRead || m == wire.MoRIIOModeWrite:
		s.Mode = m
	default:
		return s, fmt.Errorf("worker %s: label %s=%q, want read or write", w.URL, wire.LabelMoRIIOMode, m)
	}
	s.Host = w.BootstrapHost()
	if h, ok := w.Labels[wire.LabelMoRIIOHost]; ok {
		if !validHost(h) {
			return s, fmt.Errorf("worker %s: label %s=%q is not a host", w.URL, wire.LabelMoRIIOHost, h)
		}
		s.Host = h
	}
	var err error
	if s.HandshakePort, err = portLabel(w, wire.LabelMoRIIOHandshakePort, wire.DefaultMoRIIOHandshakePort); err != nil {
		return s, err
	}
	if s.NotifyPort, err = portLabel(w, wire.LabelMoRIIONotifyPort, wire.DefaultMoRIIONotifyPort); err != nil {
		return s, err
	}
	switch d, ok := w.Labels[wire.LabelMoRIIOWriteDispatch]; {
	case !ok || d == wire.MoRIIODispatchSequential:
	case d == wire.MoRIIODispatchConcurrent:
		s.Concurrent = true
	default:
		return s, fmt.Errorf("worker %s: label %s=%q, want sequential or concurrent", w.URL, wire.LabelMoRIIOWriteDispatch, d)
	}
	if v, ok := w.Labels[wire.LabelTPSize]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return s, fmt.Errorf("worker %s: label %s=%q is not a positive integer", w.URL, wire.LabelTPSize, v)
		}
		s.TPSize = n
	}
	return s, nil
}

func portLabel(w worker.Worker, key string, def int) (int, error) {
	v, ok := w.Labels[key]
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("worker %s: label %s=%q is not a port (1-65535)", w.URL, key, v)
	}
	return n, nil
}

// validHost is a non-empty host without whitespace (the shape the decode engine dials).
func validHost(h string) bool {
	return h != "" && !strings.ContainsFunc(h, func(r rune) bool {
		return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f' || r == 0x85 || r == 0xA0
	})
}

// localHost reports whether h is loopback or unspecified: localhost, 127.0.0.0/8, ::1,
// 0.0.0.0, :: (brackets allowed). A peer on another machine cannot reach such an address.
func localHost(h string) bool {
	h = strings.TrimSuffix(strings.TrimPrefix(strings.ToLower(h), "["), "]")
	if h == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(h)
	return err == nil && (a.IsLoopback() || a.IsUnspecified())
}

// MoRIIOPair is a checked MoRI-IO prefill/decode pair.
type MoRIIOPair struct {
	Prefill, Decode MoRIIOSide
	// Concurrent: both WRITE legs go out at once (the decode's moriio_write_dispatch).
	Concurrent bool
}

// Write reports whether the pair runs in WRITE mode.
func (p *MoRIIOPair) Write() bool { return p.Prefill.Mode == wire.MoRIIOModeWrite }

// CheckMoRIIOPair checks a pair before any leg is contacted (seed "MoRI-IO (HTTP)"): both
// legs MoRI-IO workers with valid labels and DP 1, the same mode, and in WRITE mode a decode
// side channel the prefill can reach — not a loopback or unspecified decode host while the
// prefill's is not, nor the prefill's own side channel; under concurrent dispatch also not a
// loopback or unspecified prefill host while the decode's is not. A refused pair returns a
// nil pair and the refusal.
func CheckMoRIIOPair(prefill, decode worker.Worker) (*MoRIIOPair, *PairRefusal) {
	p, err := ReadMoRIIOSide(prefill)
	if err != nil {
		return nil, misconfigured("prefill", err.Error())
	}
	d, err := ReadMoRIIOSide(decode)
	if err != nil {
		return nil, misconfigured("decode", err.Error())
	}
	if p.Mode != d.Mode {
		return nil, misconfigured("", fmt.Sprintf("prefill %s is in %s mode, decode %s in %s mode", prefill.URL, p.Mode, decode.URL, d.Mode))
	}
	pair := &MoRIIOPair{Prefill: p, Decode: d, Concurrent: d.Mode == wire.MoRIIOModeWrite && d.Concurrent}
	if !pair.Write() {
		return pair, nil
	}
	if localHost(d.Host) && !localHost(p.Host) {
		return nil, misconfigured("decode", fmt.Sprintf("decode %s side channel host %q is loopback or unspecified, but prefill %s (host %q) is not: the prefill cannot push to it", decode.URL, d.Host, prefill.URL, p.Host))
	}
	if strings.EqualFold(d.Host, p.Host) && (d.HandshakePort == p.HandshakePort || d.NotifyPort == p.NotifyPort) {
		return nil, misconfigured("decode", fmt.Sprintf("decode %s side channel %s (handshake %d, notify %d) is the prefill's own (%s handshake %d, notify %d)", decode.URL, d.Host, d.HandshakePort, d.NotifyPort, p.Host, p.HandshakePort, p.NotifyPort))
	}
	if pair.Concurrent && localHost(p.Host) && !localHost(d.Host) {
		return nil, misconfigured("prefill", fmt.Sprintf("prefill %s side channel host %q is loopback or unspecified, but decode %s (host %q) is not: under concurrent dispatch the decode cannot dial it", prefill.URL, p.Host, decode.URL, d.Host))
	}
	return pair, nil
}

// misconfiguredMessage is the client-facing text of moriio_pair_misconfigured; the reason
// goes to the gateway log (seed: "The reason is in the gateway log").
const misconfiguredMessage = "The selected prefill/decode pair is not configured for MoRI-IO; the reason is in the gateway log."

// PairRefusal is why CheckMoRIIOPair refused a pair.
type PairRefusal struct {
	// Leg is the leg at fault ("prefill", "decode"), "" when it is the pair (modes differ).
	Leg string
	// Reason is the text for the gateway log.
	Reason string
}

// Err is the client error: *errs.Error 503 moriio_pair_misconfigured, not retryable.
func (r *PairRefusal) Err() *errs.Error {
	return &errs.Error{Status: 503, Code: wire.CodeMoRIIOPairMisconfig, Leg: r.Leg, Message: misconfiguredMessage}
}

func misconfigured(leg, reason string) *PairRefusal { return &PairRefusal{Leg: leg, Reason: reason} }

// CheckMoRIIORequest refuses what a MoRI-IO pair cannot serve, before any leg is contacted
// (seed "MoRI-IO (HTTP)"), in this order: a route other than chat and completions (501
// moriio_route_unsupported); n>1, a completions prompt batch of more than one prompt, a
// prompt_embeds list of more than one entry, or use_beam_search true (400
// moriio_fanout_unsupported); a peer-address marker (___prefill_addr_, ___decode_addr_) in
// any forwarded X-Request-Id value or the body's request_id (400
// moriio_request_id_reserved). requestIDs are the X-Request-Id values forwarded to the legs.
func CheckMoRIIORequest(req *Request, requestIDs []string) error {
	if req.Route != RouteChat && req.Route != RouteCompletions {
		return &errs.Error{Status: 501, Code: wire.CodeMoRIIORouteUnsupported,
			Message: fmt.Sprintf("MoRI-IO PD supports only %s and %s, not %s", wire.PathChatCompletions, wire.PathCompletions, req.Route)}
	}
	fanout := func(what string) error {
		return &errs.Error{Status: 400, Code: wire.CodeMoRIIOFanoutUnsupported,
			Message: "MoRI-IO hands one prompt's KV to one decode request; " + what + " would share one handoff"}
	}
	switch {
	case req.N > 1:
		return fanout(fmt.Sprintf("n=%d", req.N))
	case req.Batch > 1:
		return fanout(fmt.Sprintf("a batch of %d prompts", req.Batch))
	}
	if raw, ok := req.Body.Get(wire.FieldPromptEmbeds); ok && jsonbody.KindOf(raw) == jsonbody.KindArray {
		if n, _ := jsonbody.ArrayLen(raw); n > 1 {
			return fanout(fmt.Sprintf("a list of %d prompt_embeds", n))
		}
	}
	if raw, ok := req.Body.Get(wire.FieldUseBeamSearch); ok {
		if b, _ := jsonbody.Bool(raw); b {
			return fanout("use_beam_search")
		}
	}
	reserved := func(where string) error {
		return &errs.Error{Status: 400, Code: wire.CodeMoRIIORequestIDReserved,
			Message: fmt.Sprintf("%s carries a MoRI-IO peer-address marker (%s or %s), which the connector would read as its peer", where, wire.MoRIIOPrefillAddrMarker, wire.MoRIIODecodeAddrMarker)}
	}
	for _, id := range requestIDs {
		if hasPeerMarker(id) {
			return reserved(wire.HeaderRequestID)
		}
	}
	if raw, ok := req.Body.Get(wire.FieldRequestID); ok {
		if s, _ := jsonbody.String(raw); hasPeerMarker(s) {
			return reserved("the body's " + wire.FieldRequestID)
		}
	}
	return nil
}

func hasPeerMarker(s string) bool {
	return strings.Contains(s, wire.MoRIIOPrefillAddrMarker) || strings.Contains(s, wire.MoRIIODecodeAddrMarker)
}
