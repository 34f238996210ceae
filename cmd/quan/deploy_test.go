package main

// Tests of deploy/prometheus and deploy/grafana against the binary: every
// metric an alert rule or a dashboard panel queries is one quan exports,
// and promtool accepts the rules and passes their unit tests.

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/quanhq/quan/prom"
)

// deployDir is the repository's deploy folder, from cmd/quan.
var deployDir = filepath.Join("..", "..", "deploy")

// alertRules is the part of a Prometheus rule file the tests read.
type alertRules struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Record      string            `yaml:"record"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

func readAlertRules(t *testing.T) alertRules {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(deployDir, "prometheus", "alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var r alertRules
	if err := yaml.Unmarshal(b, &r); err != nil {
		t.Fatalf("alerts.yml: %v", err)
	}
	return r
}

// dashboardQueries returns every PromQL expression in a Grafana dashboard:
// the panels' targets ("expr", at any depth, rows included) and the
// template variables' queries.
func dashboardQueries(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d any
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var exprs []string
	var walk func(v any, inTemplating bool)
	walk = func(v any, inTemplating bool) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				switch s, ok := e.(string); {
				case ok && k == "expr", ok && k == "query" && inTemplating:
					exprs = append(exprs, s)
				default:
					walk(e, inTemplating || k == "templating")
				}
			}
		case []any:
			for _, e := range v {
				walk(e, inTemplating)
			}
		}
	}
	walk(d, false)
	return exprs
}

var (
	// promqlStrings are string literals, whose content is never a metric
	// name (label values, regexps); grafanaVars are $var, ${var} and
	// ${var:fmt}; promqlComments run from # to the end of the line.
	promqlStrings  = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`")
	grafanaVars    = regexp.MustCompile(`\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*`)
	promqlComments = regexp.MustCompile(`#[^\n]*`)
	promqlIdents   = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)
)

// metricNames returns the metric names expr uses that quan should export:
// the identifiers starting quan_, go_ or process_. Functions, keywords,
// label names and Prometheus's own series (up) never start so.
func metricNames(expr string) []string {
	expr = promqlComments.ReplaceAllString(promqlStrings.ReplaceAllString(expr, `""`), "")
	expr = grafanaVars.ReplaceAllString(expr, " ")
	var names []string
	for _, id := range promqlIdents.FindAllString(expr, -1) {
		if strings.HasPrefix(id, "quan_") || strings.HasPrefix(id, "go_") || strings.HasPrefix(id, "process_") {
			if !slices.Contains(names, id) {
				names = append(names, id)
			}
		}
	}
	return names
}

func TestMetricNames(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`sum by (result) (rate(quan_claims_total{result!="ok", job=~"quan_.*"}[5m]))`, []string{"quan_claims_total"}},
		{`histogram_quantile(0.99, sum by (le, op) (rate(quan_backend_duration_seconds_bucket{backend="$backend"}[$__rate_interval])))`, []string{"quan_backend_duration_seconds_bucket"}},
		{"a / on(instance) group_left go_goroutines # quan_not_this\n+ process_cpu_seconds_total offset 5m", []string{"go_goroutines", "process_cpu_seconds_total"}},
		{`label_values(quan_http_requests_total{instance=~"${instance:regex}"}, route)`, []string{"quan_http_requests_total"}},
		{`up{job=~"quan.*"} == 0 or vector(0)`, nil},
	} {
		if got := metricNames(tc.expr); !slices.Equal(got, tc.want) {
			t.Errorf("metricNames(%q) = %q, want %q", tc.expr, got, tc.want)
		}
	}
}

// exportedMetrics returns the names of the metric families a `quan serve`
// and a `quan worker` register, from their registries' descriptors
// (prom.Names): a vector with no series yet is missing from a scrape but
// not from these. Each process's scrape is checked to be a subset.
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	serve := startServe(t, testEnv(t))
	wenv := testEnv(t)
	// A worker that sends SMS has the dispatcher's metrics; nothing is
	// queued, so it never calls the gateway.
	wenv["QUAN_SMS_URL"], wenv["QUAN_SMS_SECRET"], wenv["QUAN_QUIET_HOURS"] = "http://127.0.0.1:9/send", "0123456789abcdef", "off"
	worker := &ServeCommand{Main: &Main{Stdout: io.Discard, Stderr: io.Discard, Getenv: func(k string) string { return wenv[k] }}, Worker: true}
	if err := worker.ParseFlags(nil); err != nil {
		t.Fatal(err)
	}
	if err := worker.Open(t.Context()); err != nil {
		worker.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { worker.Close() })

	exported := map[string]bool{}
	for _, p := range []*ServeCommand{serve, worker} {
		names, err := prom.Names(p.App().Metrics)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			exported[n] = true
		}
		res, err := http.Get(p.AdminURL() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		for _, m := range regexp.MustCompile(`(?m)^# TYPE (\S+) `).FindAllStringSubmatch(string(body), -1) {
			if !slices.Contains(names, m[1]) {
				t.Errorf("%s scrapes %s, which its registry does not describe", p.role(), m[1])
			}
		}
	}
	return exported
}

// exports reports whether name is an exported family, or a histogram's or
// summary's _bucket, _sum or _count series of one.
func exports(exported map[string]bool, name string) bool {
	if exported[name] {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && exported[base] {
			return true
		}
	}
	return false
}

// TestDeployMetricsExist checks that every metric named by
// deploy/prometheus/alerts.yml and deploy/grafana/quan.json is one quan
// exports.
func TestDeployMetricsExist(t *testing.T) {
	exported := exportedMetrics(t)
	used := map[string][]string{} // metric → where
	for _, g := range readAlertRules(t).Groups {
		for _, r := range g.Rules {
			for _, n := range metricNames(r.Expr) {
				used[n] = append(used[n], "alerts.yml "+r.Alert+r.Record)
			}
		}
	}
	queries := dashboardQueries(t, filepath.Join(deployDir, "grafana", "quan.json"))
	if len(queries) < 20 {
		t.Errorf("quan.json: only %d queries found", len(queries))
	}
	for _, q := range queries {
		for _, n := range metricNames(q) {
			used[n] = append(used[n], "quan.json")
		}
	}
	if len(used) == 0 {
		t.Fatal("no metric names found")
	}
	for _, n := range slices.Sorted(maps.Keys(used)) {
		if where := used[n]; !exports(exported, n) {
			slices.Sort(where)
			t.Errorf("%s (%s) is not a metric quan exports", n, strings.Join(slices.Compact(where), ", "))
		}
	}
	for _, n := range slices.Sorted(maps.Keys(exported)) {
		if strings.HasPrefix(n, "quan_") && used[n] == nil && used[n+"_bucket"] == nil && used[n+"_count"] == nil {
			t.Logf("%s is neither alerted on nor on the dashboard", n)
		}
	}
}

// TestAlertRulesShape checks what promtool does not: every alert routes
// (severity and notify labels of the known values) and explains itself.
func TestAlertRulesShape(t *testing.T) {
	seen := map[string]bool{}
	for _, g := range readAlertRules(t).Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			if seen[r.Alert] {
				t.Errorf("alert %s twice", r.Alert)
			}
			seen[r.Alert] = true
			if !slices.Contains([]string{"critical", "warning", "info"}, r.Labels["severity"]) {
				t.Errorf("%s: severity %q", r.Alert, r.Labels["severity"])
			}
			if !slices.Contains([]string{"email_sms", "chat", "prometheus"}, r.Labels["notify"]) {
				t.Errorf("%s: notify %q", r.Alert, r.Labels["notify"])
			}
			if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("%s: no summary or description", r.Alert)
			}
		}
	}
	// The seed's three and the others.
	for _, a := range []string{"QuanCouponExpiryLag", "QuanCouponTransitionFailures", "QuanLockContention",
		"QuanStockDrift", "QuanClaimsDeadLettered", "QuanClaimLatencyHigh", "QuanTaskStalled", "QuanNotReady", "QuanTargetDown", "QuanNotificationsFailing"} {
		if !seen[a] {
			t.Errorf("no alert %s", a)
		}
	}
}

// TestPromtool runs `promtool check rules` and `promtool test rules` on
// alerts.yml, and has promtool parse the dashboard's queries, if promtool
// is installed; with QUAN_TEST_PROMTOOL=1 (CI) a missing promtool
// fails the test.
func TestPromtool(t *testing.T) {
	path, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("QUAN_TEST_PROMTOOL") == "1" {
			t.Fatalf("QUAN_TEST_PROMTOOL=1 but %v (apt-get install prometheus)", err)
		}
		t.Skip("promtool not installed; QUAN_TEST_PROMTOOL=1 makes this a failure")
	}
	dir, err := filepath.Abs(filepath.Join(deployDir, "prometheus"))
	if err != nil {
		t.Fatal(err)
	}
	// The dashboard's queries as recording rules, so that promtool parses
	// them too, with Grafana's interval variables given values.
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	vars := strings.NewReplacer("$__rate_interval", "5m", "$__range", "1h")
	for i, q := range dashboardQueries(t, filepath.Join(deployDir, "grafana", "quan.json")) {
		if strings.HasPrefix(q, "label_values(") || q == "prometheus" {
			continue // a template variable's query, not PromQL
		}
		expr, _ := json.Marshal(vars.Replace(q)) // a JSON string is a YAML string
		fmt.Fprintf(&rules, "      - record: dashboard:query%d\n        expr: %s\n", i, expr)
	}
	dashRules := filepath.Join(t.TempDir(), "dashboard.yml")
	if err := os.WriteFile(dashRules, []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"check", "rules", "alerts.yml"},
		{"test", "rules", "alerts_test.yml"},
		{"check", "rules", dashRules},
	} {
		cmd := exec.CommandContext(t.Context(), path, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestDashboardShape checks what Grafana would only show on import: panel
// ids are unique, every panel and query uses the dashboard's Prometheus
// variable, and every query has an expression.
func TestDashboardShape(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(deployDir, "grafana", "quan.json"))
	if err != nil {
		t.Fatal(err)
	}
	type datasource struct{ Type, UID string }
	var d struct {
		UID           string
		SchemaVersion int
		Templating    struct {
			List []struct{ Name, Type, Query any }
		}
		Panels []struct {
			ID         int
			Type       string
			Title      string
			Datasource *datasource
			GridPos    struct{ H, W, X, Y int }
			Targets    []struct {
				RefID      string
				Expr       string
				Datasource *datasource
			}
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	if d.UID == "" || d.SchemaVersion < 39 {
		t.Errorf("uid %q, schemaVersion %d", d.UID, d.SchemaVersion)
	}
	if !slices.ContainsFunc(d.Templating.List, func(v struct{ Name, Type, Query any }) bool {
		return v.Name == "datasource" && v.Type == "datasource" && v.Query == "prometheus"
	}) {
		t.Error("no datasource variable of type prometheus")
	}
	ids := map[int]bool{}
	rows := 0
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d twice", p.ID)
		}
		ids[p.ID] = true
		if p.GridPos.W == 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %q: gridPos %+v", p.Title, p.GridPos)
		}
		if p.Type == "row" {
			rows++
			continue
		}
		ds := datasource{"prometheus", "${datasource}"}
		if p.Datasource == nil || *p.Datasource != ds || len(p.Targets) == 0 {
			t.Errorf("panel %q: datasource %v, %d queries", p.Title, p.Datasource, len(p.Targets))
		}
		for _, q := range p.Targets {
			if q.Expr == "" || q.RefID == "" || q.Datasource == nil || *q.Datasource != ds {
				t.Errorf("panel %q: query %+v", p.Title, q)
			}
		}
	}
	if rows < 7 {
		t.Errorf("%d rows, want claims, tasks, lifecycle, backends, reconciliation, HTTP, Go", rows)
	}
}
