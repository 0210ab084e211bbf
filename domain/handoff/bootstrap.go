package handoff

import (
	"strconv"

	"github.com/smg-go/smg/domain/jsonbody"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
)

// Target is where both SGLang legs of one dispatch meet (the prefill worker's bootstrap
// server) plus the --dp-aware rank fields (smg-spec.md §2.5.2, §2.5.3; engines.md §2.1).
type Target struct {
	// Host is the prefill worker's bootstrap host (worker.Worker.BootstrapHost).
	Host string
	// Port is the prefill's registered bootstrap port, forwarded as it is; nil is sent as
	// JSON null (HTTP substitutes no default, seed "Parallel Dispatch").
	Port *int
	// PrefillDPRank, when set, adds "routed_dp_rank" to the prefill leg and
	// "disagg_prefill_dp_rank" to the decode leg.
	PrefillDPRank *int
	// DecodeDPRank, when set, adds "routed_dp_rank" to the decode leg.
	DecodeDPRank *int
}

// TargetFor builds the Target of a selected pair. With dpAware the workers' DP ranks (set
// for --dp-aware expansions) are carried; otherwise no rank fields are added.
func TargetFor(prefill, decode worker.Worker, dpAware bool) Target {
	t := Target{Host: prefill.BootstrapHost(), Port: prefill.BootstrapPort}
	if dpAware {
		t.PrefillDPRank, t.DecodeDPRank = prefill.DPRank, decode.DPRank
	}
	return t
}

// Legs are the two SGLang leg bodies of one dispatch and the rooms minted for it.
type Legs struct {
	// Prefill and Decode are the leg bodies. Without DP ranks they are the same slice (the
	// legs carry identical bytes): treat both as read-only.
	Prefill, Decode []byte
	// Rooms are the bootstrap rooms, one per prompt (len 1 for the scalar form), for logs
	// and metrics.
	Rooms []uint64
}

// BootstrapPatch returns the leg bodies of an SGLang dispatch: body plus bootstrap_host,
// bootstrap_port and bootstrap_room, overwriting any client-sent values in place and
// appending them at the end otherwise (smg-spec.md §2.5.2). With batch == 0 the three
// fields are scalars; with batch = N > 0 they are N-element lists of the same host, the same
// port and N independently minted rooms. Both legs carry identical values. mint draws each
// room (nil means MintRoom). Cost: one exactly sized allocation per distinct body plus the
// rooms slice.
func BootstrapPatch(body *jsonbody.Object, batch int, t Target, mint func() uint64) Legs {
	if mint == nil {
		mint = MintRoom
	}
	n := max(batch, 1)
	rooms := make([]uint64, n)
	for i := range rooms {
		rooms[i] = mint()
	}
	p := body.Edit()
	if batch == 0 {
		p.SetString(wire.FieldBootstrapHost, t.Host)
		if t.Port != nil {
			p.SetInt(wire.FieldBootstrapPort, int64(*t.Port))
		} else {
			p.SetNull(wire.FieldBootstrapPort)
		}
		p.SetUint(wire.FieldBootstrapRoom, rooms[0])
	} else {
		hosts, ports, roomList := bootstrapLists(t, rooms)
		p.Set(wire.FieldBootstrapHost, hosts)
		p.Set(wire.FieldBootstrapPort, ports)
		p.Set(wire.FieldBootstrapRoom, roomList)
	}
	defer p.Release()
	if t.PrefillDPRank == nil && t.DecodeDPRank == nil {
		b := p.Bytes()
		return Legs{Prefill: b, Decode: b, Rooms: rooms}
	}
	// The decode leg first: it may carry both rank fields.
	p.Delete(wire.FieldRoutedDPRank).Delete(wire.FieldDisaggPrefillDPRank)
	if t.DecodeDPRank != nil {
		p.SetInt(wire.FieldRoutedDPRank, int64(*t.DecodeDPRank))
	}
	if t.PrefillDPRank != nil {
		p.SetInt(wire.FieldDisaggPrefillDPRank, int64(*t.PrefillDPRank))
	}
	decode := p.Bytes()
	if t.PrefillDPRank != nil {
		p.SetInt(wire.FieldRoutedDPRank, int64(*t.PrefillDPRank))
	} else {
		p.Delete(wire.FieldRoutedDPRank)
	}
	p.Delete(wire.FieldDisaggPrefillDPRank)
	return Legs{Prefill: p.Bytes(), Decode: decode, Rooms: rooms}
}

// bootstrapLists renders the three list values into one buffer.
func bootstrapLists(t Target, rooms []uint64) (hosts, ports, roomList []byte) {
	host := jsonbody.AppendString(nil, t.Host)
	port := []byte("null")
	if t.Port != nil {
		port = strconv.AppendInt(nil, int64(*t.Port), 10)
	}
	n := len(rooms)
	buf := make([]byte, 0, n*(len(host)+len(port)+22)+6)
	buf = appendRepeated(buf, host, n)
	h := len(buf)
	buf = appendRepeated(buf, port, n)
	pe := len(buf)
	buf = append(buf, '[')
	for i, r := range rooms {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = strconv.AppendUint(buf, r, 10)
	}
	buf = append(buf, ']')
	return buf[:h:h], buf[h:pe:pe], buf[pe:]
}

func appendRepeated(dst, v []byte, n int) []byte {
	dst = append(dst, '[')
	for i := range n {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, v...)
	}
	return append(dst, ']')
}
