package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/quanhq/quan"
)

// scrape reads the metrics on the admin listener at base.
func scrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	res, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s/metrics: %s", base, res.Status)
	}
	var p expfmt.TextParser
	mfs, err := p.TextToMetricFamilies(res.Body)
	if err != nil {
		t.Fatalf("parse %s/metrics: %v", base, err)
	}
	return mfs
}

// metric returns the value of the series of name with labels (name,
// value, ...) in mfs: a counter's or gauge's value, a histogram's count;
// ok is false if there is no such series.
func metric(mfs map[string]*dto.MetricFamily, name string, labels ...string) (v float64, ok bool) {
	mf := mfs[name]
	if mf == nil {
		return 0, false
	}
series:
	for _, m := range mf.GetMetric() {
		have := map[string]string{}
		for _, lp := range m.GetLabel() {
			have[lp.GetName()] = lp.GetValue()
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if have[labels[i]] != labels[i+1] {
				continue series
			}
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

// wantMetrics checks the series of want ("name{a=b,c=d}" → value) in
// mfs, naming the process.
func wantMetrics(t *testing.T, process string, mfs map[string]*dto.MetricFamily, want map[string]float64) {
	t.Helper()
	for series, v := range want {
		name, rest, _ := strings.Cut(series, "{")
		var labels []string
		for _, kv := range strings.Split(strings.TrimSuffix(rest, "}"), ",") {
			if k, val, ok := strings.Cut(kv, "="); ok {
				labels = append(labels, k, val)
			}
		}
		if got, ok := metric(mfs, name, labels...); !ok || got != v {
			t.Errorf("%s: %s = %v (present %t), want %v", process, series, got, ok, v)
		}
	}
}

// TestMetricsMoveWithTraffic scrapes a running serve and a running worker
// on one data folder while they do real work: a claim over HTTP (serve),
// a distribution task uploaded over HTTP and run by the worker (serve's
// runner is off), and a sweep expiring the coupons once the clock passes
// their window (serve, restarted with a sweeper). Both processes read the
// store's gauges: tasks by status and the expiry lag.
func TestMetricsMoveWithTraffic(t *testing.T) {
	env := testEnv(t)
	env["QUAN_RUNNER"] = "false"
	env["QUAN_SWEEP_EVERY"] = "0"
	env["QUAN_TASK_POLL"] = "10ms"
	clk := &clock{now: time.Now().UTC().Truncate(time.Second)}
	open := func(env map[string]string, worker bool) *ServeCommand {
		t.Helper()
		logs := &syncBuffer{}
		cmd := &ServeCommand{Main: &Main{Stdout: logs, Stderr: logs, Getenv: func(k string) string { return env[k] }, Now: clk.Now}, Worker: worker}
		if err := cmd.ParseFlags(nil); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Open(context.Background()); err != nil {
			cmd.Close()
			t.Fatalf("open: %v\n%s", err, logs.String())
		}
		t.Cleanup(func() { cmd.Close() })
		return cmd
	}
	srv := open(env, false)
	wenv := map[string]string{}
	for k, v := range env {
		wenv[k] = v
	}
	delete(wenv, "QUAN_RUNNER")
	worker := open(wenv, true)

	tpl, err := srv.App().CreateDemoTemplate(t.Context(), 10)
	if err != nil {
		t.Fatal(err)
	}
	// A claim.
	user := strings.TrimSpace(runQuan(t, env, "token --role user --user 7 --ttl 1000h"))
	req, _ := http.NewRequest("POST", fmt.Sprintf("%s/api/v1/templates/%d/claim", srv.URL(), tpl.ID), nil)
	req.Header.Set("Authorization", "Bearer "+user)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusAccepted {
		t.Fatalf("claim: %s", res.Status)
	}
	eventually(t, "the claim persisted", func() bool {
		v, _ := metric(scrape(t, srv.AdminURL()), "quan_claims_decided_total", "result", "issued")
		return v == 1
	})
	wantMetrics(t, "serve", scrape(t, srv.AdminURL()), map[string]float64{
		"quan_claims_total{result=accepted}":           1,
		"quan_claims_total{result=sold_out}":           0,
		"quan_claim_duration_seconds":                  1,
		"quan_claim_handoff_pending":                   0,
		"quan_claim_persist_backlog_messages":          0,
		"quan_tasks{status=succeeded}":                 0,
		"quan_coupon_expiry_lag_seconds":               0,
		"quan_lock_contention_total{lock=store_retry}": 0,
	})

	// A task, run by the worker.
	merchant := strings.TrimSpace(runQuan(t, env, "token --role merchant --shop 1 --ttl 1000h"))
	api := &apiClient{t: t, base: srv.URL(), token: merchant}
	task := api.upload(map[string]string{"name": "metrics", "templateId": fmt.Sprint(tpl.ID)}, "u.csv", "userId\n1\n2\n2\nabc\n7\n")
	if got := api.wait(task); got.Status != quan.TaskSucceeded || got.Counts.Issued != 2 {
		t.Fatalf("task: %+v", got)
	}
	wmfs := scrape(t, worker.AdminURL())
	wantMetrics(t, "worker", wmfs, map[string]float64{
		"quan_task_rows_total{outcome=issued}":            2,
		"quan_task_rows_total{outcome=duplicate_in_file}": 1,
		"quan_task_rows_total{outcome=invalid_id}":        1,
		"quan_task_rows_total{outcome=limit_reached}":     1, // user 7 claimed
		"quan_task_chunks_total{result=applied}":          1,
		"quan_task_chunks_total{result=failed}":           0,
		"quan_tasks{status=succeeded}":                    1,
		"quan_tasks{status=running}":                      0,
		"quan_task_stalled_seconds":                       0,
	})
	if _, ok := metric(wmfs, "quan_claims_total"); ok {
		t.Error("a worker on the embedded bus takes no claims, but shows quan_claims_total")
	}
	wantMetrics(t, "serve", scrape(t, srv.AdminURL()), map[string]float64{
		"quan_task_rows_total{outcome=issued}": 0, // its runner is off
		"quan_tasks{status=succeeded}":         1,
	})

	// Time passes the coupons' window (72 hours): an hour late, until a
	// sweep expires them.
	clk.Set(clk.Now().Add(73 * time.Hour))
	wantMetrics(t, "worker", scrape(t, worker.AdminURL()), map[string]float64{"quan_coupon_expiry_lag_seconds": 3600})
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	env["QUAN_SWEEP_EVERY"] = "10ms"
	srv = open(env, false)
	eventually(t, "the sweep", func() bool {
		v, _ := metric(scrape(t, srv.AdminURL()), "quan_coupon_transitions_total", "from", "available", "to", "expired", "result", "ok")
		return v == 3
	})
	wantMetrics(t, "serve", scrape(t, srv.AdminURL()), map[string]float64{
		"quan_coupon_transitions_total{from=available,to=expired,result=error}": 0,
		"quan_coupon_locks_expired_total":                                       0,
		"quan_coupon_expiry_lag_seconds":                                        0,
	})
	wantMetrics(t, "worker", scrape(t, worker.AdminURL()), map[string]float64{"quan_coupon_expiry_lag_seconds": 0})
}

// eventually waits up to 20 seconds for ok, failing the test after.
func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 20 s", what)
		}
	}
}
