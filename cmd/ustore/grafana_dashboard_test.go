package main

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// dashboardPanels are the panels contrib/grafana/ustore.json must keep:
// the ones issue 17 asked for, by title.
var dashboardPanels = []string{
	"Request latency by op", "Requests by op and status", "Fsync latency", "Fsync outcomes",
	"Log-sync batch size", "Commit phases", "Lock waits", "Node cache hit ratio",
}

// scrapeLabels are the labels Prometheus adds to every series it scrapes:
// a dashboard may select on them though /metrics does not carry them.
var scrapeLabels = map[string]bool{"instance": true, "job": true}

// grafanaVar matches Grafana's interval variables, which stand where
// PromQL wants a duration: the check puts one there to parse the query.
var grafanaVar = regexp.MustCompile(`\$\{?__(rate_interval|interval|range)\}?`)

// labelValuesQuery matches a template variable's label_values(selector,
// label) query.
var labelValuesQuery = regexp.MustCompile(`^label_values\((.+),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`)

// checkDashboard loads a Grafana dashboard and checks that it has its key
// panels, each with a query, and that every PromQL expression in it
// parses and names only series /metrics serves (fams, a real server's
// scrape), selected and grouped by labels those series carry.
func checkDashboard(t *testing.T, path string, fams map[string]*dto.MetricFamily) {
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title         string `json:"title"`
		UID           string `json:"uid"`
		SchemaVersion int    `json:"schemaVersion"`
		Panels        []struct {
			ID      int    `json:"id"`
			Title   string `json:"title"`
			Type    string `json:"type"`
			GridPos *struct {
				H, W, X, Y int
			} `json:"gridPos"`
			Targets []struct {
				Expr  string `json:"expr"`
				RefID string `json:"refId"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if dash.Title == "" || dash.UID == "" || dash.SchemaVersion == 0 {
		t.Errorf("%s: title %q uid %q schemaVersion %d: a dashboard needs all three", path, dash.Title, dash.UID, dash.SchemaVersion)
	}

	series := exposedSeries(fams)
	var exprs []string
	titles := map[string]bool{}
	ids := map[int]bool{}
	for _, p := range dash.Panels {
		titles[p.Title] = true
		if ids[p.ID] || p.GridPos == nil || p.GridPos.W == 0 || p.GridPos.H == 0 {
			t.Errorf("panel %q: id %d repeated, or no grid position", p.Title, p.ID)
		}
		ids[p.ID] = true
		if p.Type == "row" || p.Type == "text" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			if q.Expr == "" || q.RefID == "" {
				t.Errorf("panel %q: a target without expr or refId", p.Title)
			}
			exprs = append(exprs, q.Expr)
		}
	}
	for _, want := range dashboardPanels {
		if !titles[want] {
			t.Errorf("no panel %q", want)
		}
	}
	for _, v := range dash.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(string)
		if m, ok := v.Query.(map[string]any); ok {
			q, _ = m["query"].(string)
		}
		m := labelValuesQuery.FindStringSubmatch(q)
		if m == nil {
			t.Errorf("variable %s: query %q is not label_values(selector, label)", v.Name, q)
			continue
		}
		exprs = append(exprs, m[1])
	}
	if len(exprs) == 0 {
		t.Fatal("no PromQL expression in the dashboard")
	}
	for _, e := range exprs {
		checkExpr(t, e, series)
	}
}

// exposedSeries maps every series name /metrics serves to the label names
// its samples carry: a histogram as its _bucket (with le), _sum and
// _count.
func exposedSeries(fams map[string]*dto.MetricFamily) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	add := func(name string, m *dto.Metric, extra ...string) {
		if out[name] == nil {
			out[name] = map[string]bool{}
		}
		for _, l := range m.GetLabel() {
			out[name][l.GetName()] = true
		}
		for _, l := range extra {
			out[name][l] = true
		}
	}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			if f.GetType() == dto.MetricType_HISTOGRAM {
				add(name+"_bucket", m, "le")
				add(name+"_sum", m)
				add(name+"_count", m)
			} else {
				add(name, m)
			}
		}
	}
	return out
}

// checkExpr parses one PromQL expression and checks the series it selects
// and the labels it matches and groups on against series.
func checkExpr(t *testing.T, expr string, series map[string]map[string]bool) {
	t.Helper()
	node, err := parser.ParseExpr(grafanaVar.ReplaceAllString(expr, "5m"))
	if err != nil {
		t.Errorf("%q: %v", expr, err)
		return
	}
	selected := map[string]bool{} // labels of the series the expression reads
	var grouped []string
	parser.Inspect(node, func(n parser.Node, _ []parser.Node) error {
		switch n := n.(type) {
		case *parser.VectorSelector:
			name := n.Name
			for _, m := range n.LabelMatchers {
				if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
					name = m.Value
				}
			}
			have, ok := series[name]
			if !ok {
				t.Errorf("%q: /metrics serves no series %q", expr, name)
				return nil
			}
			for _, m := range n.LabelMatchers {
				if m.Name != labels.MetricName && !have[m.Name] && !scrapeLabels[m.Name] {
					t.Errorf("%q: series %s has no label %q", expr, name, m.Name)
				}
			}
			for l := range have {
				selected[l] = true
			}
		case *parser.AggregateExpr:
			grouped = append(grouped, n.Grouping...)
		case *parser.BinaryExpr:
			if n.VectorMatching != nil {
				grouped = append(grouped, n.VectorMatching.MatchingLabels...)
			}
		}
		return nil
	})
	for _, l := range grouped {
		if !selected[l] && !scrapeLabels[l] {
			t.Errorf("%q: groups by %q, which none of its series carries (%s)", expr, l, strings.Join(keysOf(selected), ", "))
		}
	}
}

func keysOf(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
