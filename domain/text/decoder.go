package text

// Decoder is the per-sample output path of the gRPC pipeline: token ids in, client text out,
// with stop token ids and stop strings applied by the gateway.
type Decoder struct {
	stream      *DecodeStream
	jail        *StopJail
	stopIDs     map[uint32]bool
	matchedID   uint32
	stoppedByID bool
}

// DecoderOptions configures a Decoder.
type DecoderOptions struct {
	// SkipSpecialTokens drops special added tokens from the text.
	SkipSpecialTokens bool
	// Stop are stop strings trimmed by the gateway; VisibleStop are kept in the text.
	Stop, VisibleStop []string
	// StopTokenIDs end the output when generated; the token itself is not emitted.
	StopTokenIDs []uint32
}

// NewDecoder starts decoding one sample.
func NewDecoder(tok *Tokenizer, opts DecoderOptions) *Decoder {
	d := &Decoder{stream: NewDecodeStream(tok, opts.SkipSpecialTokens), jail: NewStopJail(opts.Stop, opts.VisibleStop)}
	if len(opts.StopTokenIDs) > 0 {
		d.stopIDs = make(map[uint32]bool, len(opts.StopTokenIDs))
		for _, id := range opts.StopTokenIDs {
			d.stopIDs[id] = true
		}
	}
	return d
}

// Step adds one generated token and returns the text to emit now; stopped is true once a stop
// token or stop string ended the output (the caller then aborts or ignores the rest).
func (d *Decoder) Step(id uint32) (out string, stopped bool) {
	if d.Stopped() {
		return "", true
	}
	if d.stopIDs[id] {
		d.stoppedByID, d.matchedID = true, id
		text, stopped := d.jail.Push(d.stream.Flush())
		if !stopped {
			text += d.jail.Flush()
		}
		return text, true
	}
	return d.jail.Push(d.stream.Step(id))
}

// Flush returns what is still held when generation ends without a stop.
func (d *Decoder) Flush() string {
	if d.Stopped() {
		return ""
	}
	out, stopped := d.jail.Push(d.stream.Flush())
	if stopped {
		return out
	}
	return out + d.jail.Flush()
}

// Stopped reports whether a stop token or string ended the output.
func (d *Decoder) Stopped() bool { return d.stoppedByID || d.jail.Stopped() }

// Matched is what ended the output: the stop string, or the stop token id (isID true); ok is
// false when nothing matched.
func (d *Decoder) Matched() (stop string, id uint32, isID, ok bool) {
	switch {
	case d.stoppedByID:
		return "", d.matchedID, true, true
	case d.jail.Stopped():
		return d.jail.Matched(), 0, false, true
	}
	return "", 0, false, false
}

// ResolvedStops is how a request's stop strings are split for SGLang, whose workers run
// without a tokenizer and reject string stops (helpers.rs resolve_string_stops, grpc.md §1.14).
type ResolvedStops struct {
	// StopTokenIDs is the request's ids plus every stop string that encodes to exactly one
	// token, deduplicated, in first-seen order.
	StopTokenIDs []uint32
	// GatewayStops is every string stop: all are removed from the engine request and trimmed
	// by the gateway.
	GatewayStops []string
}

// ResolveStringStops splits stops for an SGLang request (encoded without special tokens).
// vLLM and TokenSpeed keep their string stops and do not use this.
func ResolveStringStops(tok *Tokenizer, stops []string, stopTokenIDs []uint32) ResolvedStops {
	r := ResolvedStops{}
	seen := map[uint32]bool{}
	add := func(id uint32) {
		if !seen[id] {
			seen[id] = true
			r.StopTokenIDs = append(r.StopTokenIDs, id)
		}
	}
	for _, id := range stopTokenIDs {
		add(id)
	}
	for _, s := range stops {
		if s == "" {
			continue
		}
		r.GatewayStops = append(r.GatewayStops, s)
		if ids := tok.Encode(s, false); len(ids) == 1 {
			add(ids[0])
		}
	}
	return r
}
