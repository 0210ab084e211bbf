package fleet

import (
	"bufio"
	"bytes"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Series is one sample line of the Prometheus text exposition: metric name (with its
// _bucket/_sum/_count suffix for histograms), labels and value.
type Series struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Metrics is one scrape of GET /metrics.
type Metrics []Series

// Metrics scrapes GET /metrics (served on the main port with --prometheus-port 0) and
// parses the sample lines. Comment lines are skipped.
func (g *Gateway) Metrics(t testing.TB) Metrics {
	t.Helper()
	r := g.Get(t, "/metrics")
	require.Equal(t, http.StatusOK, r.Status, "GET /metrics")
	m, err := ParseMetrics(r.Body)
	require.NoError(t, err)
	return m
}

// ParseMetrics parses Prometheus text format sample lines: name{k="v",...} value. Label
// values may contain escaped quotes and backslashes.
func ParseMetrics(text []byte) (Metrics, error) {
	var out Metrics
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		s := Series{Labels: map[string]string{}}
		rest := line
		if i := strings.IndexAny(line, "{ "); i >= 0 && line[i] == '{' {
			s.Name = line[:i]
			rest = line[i+1:]
			for {
				rest = strings.TrimLeft(rest, ", ")
				if strings.HasPrefix(rest, "}") {
					rest = rest[1:]
					break
				}
				eq := strings.Index(rest, `="`)
				if eq < 0 {
					return nil, errBadLine(line)
				}
				k := rest[:eq]
				rest = rest[eq+2:]
				var v strings.Builder
				j := 0
				for ; j < len(rest) && rest[j] != '"'; j++ {
					if rest[j] == '\\' && j+1 < len(rest) {
						j++
						if rest[j] == 'n' {
							v.WriteByte('\n')
							continue
						}
					}
					v.WriteByte(rest[j])
				}
				if j >= len(rest) {
					return nil, errBadLine(line)
				}
				s.Labels[k] = v.String()
				rest = rest[j+1:]
			}
		} else {
			sp := strings.IndexByte(line, ' ')
			if sp < 0 {
				return nil, errBadLine(line)
			}
			s.Name, rest = line[:sp], line[sp:]
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return nil, errBadLine(line)
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return nil, errBadLine(line)
		}
		s.Value = v
		out = append(out, s)
	}
	return out, sc.Err()
}

type errBadLine string

func (e errBadLine) Error() string { return "metrics: cannot parse line " + strconv.Quote(string(e)) }

// Find returns the series named name whose labels include every k, v pair of kv
// ("worker_type", "prefill", ...).
func (m Metrics) Find(name string, kv ...string) []Series {
	var out []Series
next:
	for _, s := range m {
		if s.Name != name {
			continue
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if v, ok := s.Labels[kv[i]]; !ok || v != kv[i+1] {
				continue next
			}
		}
		out = append(out, s)
	}
	return out
}

// Sum adds the values of the series Find returns (0 when none).
func (m Metrics) Sum(name string, kv ...string) float64 {
	total := 0.0
	for _, s := range m.Find(name, kv...) {
		total += s.Value
	}
	return total
}

// Has reports whether at least one series matches.
func (m Metrics) Has(name string, kv ...string) bool { return len(m.Find(name, kv...)) > 0 }

// LabelNames returns the sorted label names of the first series named name ("le" dropped),
// nil when there is none.
func (m Metrics) LabelNames(name string) []string {
	for _, s := range m {
		if s.Name != name {
			continue
		}
		var ks []string
		for k := range s.Labels {
			if k != "le" {
				ks = append(ks, k)
			}
		}
		sort.Strings(ks)
		return ks
	}
	return nil
}
