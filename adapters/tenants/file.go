// Package tenants reads the gateway's --tenants-file and resolves each data-plane request's
// tenant: from its API key (`Authorization: Bearer <key>`, compared as SHA-256 digests) or
// from a trusted header set by an authenticating proxy (--tenant-header). The file is
// re-read when its content changes; a bad file is reported with the line at fault and the
// tenants already in force stay.
package tenants

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/smg-go/smg/domain/tenant"
)

// validName is what a tenant name may hold: it becomes a metric label, a log field and part
// of a Redis key.
var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ValidName reports whether s may name a tenant: 1 to 64 letters, digits, '.', '_' and '-',
// starting with a letter or digit.
func ValidName(s string) bool { return validName.MatchString(s) }

// LineError is a tenants-file error at a line (1-based; 0 when the line is not known).
type LineError struct {
	Line int
	Msg  string
}

// Error implements error: "line N: msg".
func (e *LineError) Error() string {
	if e.Line <= 0 {
		return e.Msg
	}
	return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
}

func lineErr(n *yaml.Node, format string, args ...any) error {
	return &LineError{Line: n.Line, Msg: fmt.Sprintf(format, args...)}
}

// Parse decodes a tenants file: YAML (or JSON), a list of tenants or an object whose
// "tenants" key holds that list. Each tenant is a map of name (required, ValidName),
// priority (integer, higher first; default 0), api_keys (a key or a list of keys),
// api_key_sha256 (a hex SHA-256 digest of a key, or a list of them) and limits (a map of
// requests_per_minute, prompt_tokens_per_minute, output_tokens_per_minute and
// max_concurrent_requests, each a non-negative integer, 0 or absent = unlimited). Unknown
// fields, duplicate names and a key given to two tenants are errors. Every error is a
// *LineError naming the line at fault.
func Parse(b []byte) (*Directory, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		n, msg := yamlLine(err)
		return nil, &LineError{Line: n, Msg: "not YAML: " + msg}
	}
	d := newDirectory()
	if len(doc.Content) == 0 {
		return d, nil // an empty file: no tenants
	}
	root := doc.Content[0]
	if root.Kind == yaml.MappingNode {
		list := mapValue(root, "tenants")
		if list == nil {
			return nil, lineErr(root, `expected a list of tenants or an object with a "tenants" list`)
		}
		root = list
	}
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return d, nil
	}
	if root.Kind != yaml.SequenceNode {
		return nil, lineErr(root, `expected a list of tenants or an object with a "tenants" list`)
	}
	for _, e := range root.Content {
		if err := d.addEntry(e); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// addEntry parses one tenant mapping into d.
func (d *Directory) addEntry(e *yaml.Node) error {
	if e.Kind != yaml.MappingNode {
		return lineErr(e, "a tenant is a map with name, priority, api_keys or api_key_sha256, and limits")
	}
	var t tenant.Tenant
	var digests []digestAt
	named := false
	for i := 0; i+1 < len(e.Content); i += 2 {
		k, v := e.Content[i], e.Content[i+1]
		switch k.Value {
		case "name":
			if err := v.Decode(&t.Name); err != nil || !ValidName(t.Name) {
				return lineErr(v, "name must be 1 to 64 letters, digits, '.', '_' or '-' (got %q)", v.Value)
			}
			named = true
		case "priority":
			if err := v.Decode(&t.Priority); err != nil {
				return lineErr(v, "priority must be an integer (got %q)", v.Value)
			}
		case "api_keys":
			keys, err := strings1(v, "api_keys")
			if err != nil {
				return err
			}
			for _, k := range keys {
				if strings.TrimSpace(k.s) == "" || strings.ContainsAny(k.s, " \t\r\n") {
					return lineErr(k.n, "an API key must not be empty nor contain spaces")
				}
				digests = append(digests, digestAt{sha256.Sum256([]byte(k.s)), k.n})
			}
		case "api_key_sha256":
			hs, err := strings1(v, "api_key_sha256")
			if err != nil {
				return err
			}
			for _, h := range hs {
				raw, err := hex.DecodeString(strings.TrimSpace(h.s))
				if err != nil || len(raw) != sha256.Size {
					return lineErr(h.n, "api_key_sha256 must be 64 hex digits (the SHA-256 of the key)")
				}
				var dg [sha256.Size]byte
				copy(dg[:], raw)
				digests = append(digests, digestAt{dg, h.n})
			}
		case "limits":
			if err := parseLimits(v, &t.Limits); err != nil {
				return err
			}
		default:
			return lineErr(k, "unknown field %q (a tenant has name, priority, api_keys, api_key_sha256 and limits)", k.Value)
		}
	}
	if !named {
		return lineErr(e, "the tenant has no name")
	}
	if _, dup := d.byName[t.Name]; dup {
		return lineErr(e, "tenant %q is listed twice", t.Name)
	}
	d.byName[t.Name] = t
	d.names = append(d.names, t.Name)
	for _, dg := range digests {
		if other, dup := d.byDigest[dg.d]; dup {
			return lineErr(dg.n, "this API key already belongs to tenant %q", other.Name)
		}
		d.byDigest[dg.d] = t
	}
	return nil
}

type digestAt struct {
	d [sha256.Size]byte
	n *yaml.Node
}

type strAt struct {
	s string
	n *yaml.Node
}

// strings1 reads a scalar or a list of scalars.
func strings1(v *yaml.Node, field string) ([]strAt, error) {
	switch v.Kind {
	case yaml.ScalarNode:
		return []strAt{{v.Value, v}}, nil
	case yaml.SequenceNode:
		out := make([]strAt, 0, len(v.Content))
		for _, c := range v.Content {
			if c.Kind != yaml.ScalarNode {
				return nil, lineErr(c, "%s must be a string or a list of strings", field)
			}
			out = append(out, strAt{c.Value, c})
		}
		return out, nil
	}
	return nil, lineErr(v, "%s must be a string or a list of strings", field)
}

// parseLimits reads the limits map (the names are tenant.Limits' yaml tags).
func parseLimits(v *yaml.Node, l *tenant.Limits) error {
	if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
		return nil
	}
	if v.Kind != yaml.MappingNode {
		return lineErr(v, "limits must be a map of requests_per_minute, prompt_tokens_per_minute, output_tokens_per_minute and max_concurrent_requests")
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], v.Content[i+1]
		var dst *int64
		switch k.Value {
		case "requests_per_minute":
			dst = &l.RequestsPerMinute
		case "prompt_tokens_per_minute":
			dst = &l.PromptTokensPerMinute
		case "output_tokens_per_minute":
			dst = &l.OutputTokensPerMinute
		case "max_concurrent_requests":
			dst = &l.MaxConcurrentRequests
		default:
			return lineErr(k, "unknown limit %q (limits are requests_per_minute, prompt_tokens_per_minute, output_tokens_per_minute and max_concurrent_requests)", k.Value)
		}
		if err := val.Decode(dst); err != nil || *dst < 0 {
			return lineErr(val, "%s must be a non-negative integer, 0 = unlimited (got %q)", k.Value, val.Value)
		}
	}
	return nil
}

// mapValue is the value node of key in mapping m, or nil.
func mapValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// yamlLine splits a yaml.v3 syntax error ("yaml: line 3: did not find ...") into its line
// (0 if none) and the rest of its message.
func yamlLine(err error) (int, string) {
	var te *yaml.TypeError
	msg := err.Error()
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	var n int
	if _, err := fmt.Sscanf(msg, "line %d:", &n); err == nil {
		if _, rest, ok := strings.Cut(msg, ": "); ok {
			msg = rest
		}
	}
	return n, msg
}
