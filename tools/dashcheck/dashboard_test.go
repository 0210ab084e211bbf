// Package dashcheck validates deploy/monitoring/dashboard.json with Grafana's own schema types
// (grafana-foundation-sdk v0.0.22): a strict decode that refuses unknown fields (a misspelt
// "targest" is an error, not an ignored key), then Validate(). The PromQL of every query is
// parsed by promtool in make rules-check (deploy/check/dashboard_rules.py). Its own module so
// the SDK stays out of the gateway's go.mod.
package dashcheck

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
)

const dashboardFile = "../../deploy/monitoring/dashboard.json"

// decode strictly unmarshals b. Grafana fills missing required fields with defaults on
// import, so "required field is missing" errors are not problems; every other error is.
func decode(t *testing.T, b []byte) (*dashboard.Dashboard, []string) {
	t.Helper()
	plugins.RegisterDefaultPlugins()
	var d dashboard.Dashboard
	var problems []string
	if err := d.UnmarshalJSONStrict(b); err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.Contains(line, "required field is missing") {
				problems = append(problems, line)
			}
		}
	}
	return &d, problems
}

func TestDashboardDecodesStrictlyAndValidates(t *testing.T) {
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	d, problems := decode(t, b)
	for _, p := range problems {
		t.Error(p)
	}
	if err := d.Validate(); err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			if !strings.Contains(line, "required field is missing") && strings.TrimSpace(line) != "" {
				t.Error(line)
			}
		}
	}
	// In v0.0.22 Panel's strict decode returns an empty, typed-nil error list even on success,
	// so PanelOrRowPanel drops every panel: each panel is decoded on its own here, and an
	// error with no message counts as none.
	var raw struct {
		Panels []json.RawMessage `json:"panels"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	queries := 0
	for i, rp := range raw.Panels {
		var p dashboard.Panel
		if err := p.UnmarshalJSONStrict(rp); err != nil && err.Error() != "" {
			t.Errorf("panels[%d]: %v", i, err)
			continue
		}
		if p.Title == nil || *p.Title == "" {
			t.Errorf("panels[%d]: no title", i)
		}
		// The same bug drops the targets (cog.StrictUnmarshalDataquery): decode them as
		// Prometheus queries directly.
		var targets struct {
			Targets []json.RawMessage `json:"targets"`
		}
		if err := json.Unmarshal(rp, &targets); err != nil {
			t.Fatal(err)
		}
		for j, rq := range targets.Targets {
			var q prometheus.Dataquery
			if err := q.UnmarshalJSONStrict(rq); err != nil && err.Error() != "" {
				t.Errorf("panels[%d].targets[%d]: %v", i, j, err)
				continue
			}
			if q.Expr == "" {
				t.Errorf("panels[%d].targets[%d]: empty expr", i, j)
			}
			queries++
		}
	}
	if queries == 0 {
		t.Fatal("no Prometheus queries decoded")
	}
}

// The strict decode catches what a plain json.Unmarshal ignores.
func TestStrictDecodeCatchesAMisspeltField(t *testing.T) {
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(b), `"targets"`, `"targest"`, 1)
	if bad == string(b) {
		t.Fatal("mutation did not apply")
	}
	if _, problems := decode(t, []byte(bad)); len(problems) == 0 {
		t.Fatal("a misspelt targets field was accepted by the dashboard decode")
	}
	var raw struct {
		Panels []json.RawMessage `json:"panels"`
	}
	if err := json.Unmarshal([]byte(bad), &raw); err != nil {
		t.Fatal(err)
	}
	var p dashboard.Panel
	if err := p.UnmarshalJSONStrict(raw.Panels[0]); err == nil || err.Error() == "" {
		t.Fatal("a misspelt targets field was accepted by the panel decode")
	}
}

func TestStrictDecodeCatchesAMisspeltQueryField(t *testing.T) {
	var q prometheus.Dataquery
	if err := q.UnmarshalJSONStrict([]byte(`{"refId":"A","exprr":"up"}`)); err == nil || err.Error() == "" {
		t.Fatal("a misspelt expr field was accepted")
	}
	if err := q.UnmarshalJSONStrict([]byte(`{"refId":"A","expr":"up"}`)); err != nil && err.Error() != "" {
		t.Fatalf("a valid query was refused: %v", err)
	}
}
