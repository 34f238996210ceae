package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// value is the value of name{labels} in families (a histogram's count),
// and whether it is there.
func value(families map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	f := families[name]
series:
	for _, m := range f.GetMetric() {
		if len(m.GetLabel()) != len(labels) {
			continue
		}
		for _, l := range m.GetLabel() {
			if labels[l.GetName()] != l.GetValue() {
				continue series
			}
		}
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM:
			return float64(m.GetHistogram().GetSampleCount()), true
		case dto.MetricType_COUNTER:
			return m.GetCounter().GetValue(), true
		default:
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// TestBackendAndHTTPMetrics: after a claim over HTTP, serve's /metrics
// counts the request under its route pattern and status and times it,
// times the store, the cache and the bus calls the claim made, and says
// each backend it checks, and the data folder, is ready; on MySQL, Redis
// and NATS too.
func TestBackendAndHTTPMetrics(t *testing.T) {
	t.Run("Embedded", func(t *testing.T) {
		testBackendAndHTTPMetrics(t, testEnv(t), "Reserve", []string{"store", "bus", "data"})
	})
	t.Run("Production", func(t *testing.T) {
		env, _ := productionEnv(t)
		// Redis takes the claim's rate-limit tokens and reserves in one
		// call: no Allow through the recorded cache.
		testBackendAndHTTPMetrics(t, env, "ReserveLimited", []string{"store", "cache", "bus", "data"})
	})
}

func testBackendAndHTTPMetrics(t *testing.T, env map[string]string, reserve string, checks []string) {
	srv := startServe(t, env)
	tpl, err := srv.App().CreateDemoTemplate(t.Context(), 10)
	if err != nil {
		t.Fatal(err)
	}
	tok := strings.TrimSpace(runQuan(t, env, "token --role user --user 7"))
	req, _ := http.NewRequest("POST", fmt.Sprintf("%s/api/v1/templates/%d/claim", srv.URL(), tpl.ID), nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusAccepted {
		t.Fatalf("claim: %s", res.Status)
	}
	res, err = http.Get(srv.URL() + "/api/v1/templates/1/nothing")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()

	m := scrape(t, srv.AdminURL())
	const route = "POST /api/v1/templates/{id}/claim"
	for _, tc := range []struct {
		name   string
		labels map[string]string
		ok     func(float64) bool
		want   string
	}{
		{"quan_http_requests_total", map[string]string{"route": route, "code": "202"}, eq(1), "1"},
		{"quan_http_request_duration_seconds", map[string]string{"route": route}, eq(1), "1 observation"},
		{"quan_http_requests_total", map[string]string{"route": "unmatched", "code": "404"}, eq(1), "1"},
		// The demo template was created in the store and primed in the cache.
		{"quan_backend_duration_seconds", map[string]string{"backend": "store", "op": "CreateTemplate"}, eq(1), "1 observation"},
		{"quan_backend_errors_total", map[string]string{"backend": "store", "op": "CreateTemplate"}, eq(0), "0"},
		{"quan_backend_duration_seconds", map[string]string{"backend": "cache", "op": "Prime"}, eq(1), "1 observation"},
		// The claim was handed to the bus.
		{"quan_backend_duration_seconds", map[string]string{"backend": "bus", "op": "PublishMany"}, atLeast(1), "observations"},
	} {
		if v, ok := value(m, tc.name, tc.labels); !ok || !tc.ok(v) {
			t.Errorf("%s%v: %v (there: %v), want %s", tc.name, tc.labels, v, ok, tc.want)
		}
	}
	if v, _ := value(m, "quan_backend_duration_seconds", map[string]string{"backend": "cache", "op": reserve}); v < 1 {
		t.Errorf("no cache %s timed", reserve)
	}
	if v, ok := value(m, "quan_backend_duration_seconds", map[string]string{"backend": "cache", "op": "Allow"}); v != 0 {
		t.Errorf("the claim took its tokens apart from its reservation: %v Allow calls (there: %v)", v, ok)
	}
	for _, check := range checks {
		if v, ok := value(m, "quan_ready", map[string]string{"check": check}); !ok || v != 1 {
			t.Errorf("quan_ready{check=%q} %v (there: %v), want 1", check, v, ok)
		}
	}
	if n := len(m["quan_ready"].GetMetric()); n != len(checks) {
		t.Errorf("%d readiness checks reported, want %v", n, checks)
	}
}

func eq(want float64) func(float64) bool     { return func(v float64) bool { return v == want } }
func atLeast(min float64) func(float64) bool { return func(v float64) bool { return v >= min } }
