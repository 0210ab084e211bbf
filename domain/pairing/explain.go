package pairing

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
)

// ExplainPrefix starts every no_compatible_pd_pair message.
const ExplainPrefix = "no prefill worker shares a KV transfer protocol with any decode worker"

// Bounds on the explanation, so that a large mixed fleet still gives a short message.
const (
	// ExplainMaxCombos is how many incompatible (prefill key, decode key) combinations the
	// message details; the rest are counted.
	ExplainMaxCombos = 3
	// ExplainMaxKeyBytes truncates each key in the message (label values are operator input).
	ExplainMaxKeyBytes = 120
)

// Explain builds the message of a 503 no_compatible_pd_pair for the given prefill and decode
// workers (normally the available ones serving the request's model), under mode m (seed
// "Explicit Pairing Protocol": "The message names the components that differ and each leg's
// keys"). Workers are grouped by descriptor; for each incompatible (prefill, decode)
// combination, in registration order, it names the first worker of each group, its key and
// the differing components, e.g.
//
//	no prefill worker shares a KV transfer protocol with any decode worker: prefill
//	0b6e… [vllm/nixl/?] vs decode 5c1d… [vllm/mooncake/?] differ in transport
//
// (one line). Workers are named by id (GET /workers maps ids to URLs), never by address,
// since the message reaches clients; a worker without an id yet is named by its URL. A
// group of several workers shows "(+N more)" after the name. At most
// ExplainMaxCombos combinations are detailed, followed by "; and N more combinations"; keys
// are cut at ExplainMaxKeyBytes. Compatible combinations are skipped; with nothing to detail
// the message is ExplainPrefix alone. Cost: O(P + D + Gp·Gd).
func Explain(prefills, decodes []*worker.Live, m Mode) string {
	return explainGroups(groupLegs(prefills), groupLegs(decodes), m)
}

func explainGroups(ps, ds []legGroup, m Mode) string {
	var b strings.Builder
	b.WriteString(ExplainPrefix)
	n := 0
	for _, p := range ps {
		for _, d := range ds {
			ok, diffs := Compatible(p.desc, d.desc, m)
			if ok {
				continue
			}
			n++
			if n > ExplainMaxCombos {
				continue
			}
			if n == 1 {
				b.WriteString(": ")
			} else {
				b.WriteString("; ")
			}
			fmt.Fprintf(&b, "prefill %s [%s] vs decode %s [%s] differ in %s",
				p.who(), clip(Key(p.desc)), d.who(), clip(Key(d.desc)), strings.Join(diffs, ", "))
		}
	}
	if n > ExplainMaxCombos {
		fmt.Fprintf(&b, "; and %d more combinations", n-ExplainMaxCombos)
	}
	return b.String()
}

// NoCompatiblePairError is the 503 no_compatible_pd_pair error (seed "Error Codes") with the
// given message, normally from Explain. It is not retryable: another attempt on the same fleet
// meets the same incompatibility.
func NoCompatiblePairError(message string) *errs.Error {
	return &errs.Error{Status: 503, Code: wire.CodeNoCompatiblePDPair, Message: message}
}

type legGroup struct {
	desc  Descriptor
	first *worker.Live
	count int
}

func (g legGroup) who() string {
	name := g.first.ID
	if name == "" {
		name = g.first.URL
	}
	if g.count > 1 {
		return fmt.Sprintf("%s (+%d more)", name, g.count-1)
	}
	return name
}

func groupLegs(ls []*worker.Live) []legGroup {
	var out []legGroup
	idx := map[Descriptor]int{}
	for _, l := range ls {
		if l == nil {
			continue
		}
		d := Describe(l.Worker)
		if i, ok := idx[d]; ok {
			out[i].count++
			continue
		}
		idx[d] = len(out)
		out = append(out, legGroup{desc: d, first: l, count: 1})
	}
	return out
}

func clip(s string) string {
	if len(s) <= ExplainMaxKeyBytes {
		return s
	}
	cut := ExplainMaxKeyBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
