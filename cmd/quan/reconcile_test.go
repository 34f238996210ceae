package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestServeReconciles: stock taken from serve's cache behind its back is
// reported (a warning naming the template and both stocks,
// quan_reconcile_repairs_total on /metrics) and given back from the
// store, while the claim made before is not taken for drift.
func TestServeReconciles(t *testing.T) {
	env := testEnv(t)
	env["QUAN_RECONCILE_EVERY"] = "20ms"
	logs := &syncBuffer{}
	srv := startServeLogs(t, env, logs)
	a := srv.App()
	tpl, err := a.CreateDemoTemplate(t.Context(), 10)
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
	cache, store := a.Backends.ClaimCache, a.Backends.Store
	waitUntil(t, "the claim persisted", func() bool {
		got, err := store.Template(t.Context(), 0, tpl.ID)
		return err == nil && got.Stock == 9
	})
	if strings.Contains(logs.String(), "drifted") {
		t.Fatalf("a claim taken for drift:\n%s", logs.String())
	}
	// Drift: three coupons of stock lost by the cache.
	for ok := false; !ok; {
		st, err := cache.State(t.Context(), tpl.ID)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err = cache.SwapStock(t.Context(), tpl.ID, st.Stock, st.Stock-3); err != nil {
			t.Fatal(err)
		}
	}
	metric := func() string {
		res, err := http.Get(srv.AdminURL() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return string(b)
	}
	waitUntil(t, "the repair on /metrics", func() bool { return strings.Contains(metric(), "quan_reconcile_repairs_total 1") })
	st, err := cache.State(t.Context(), tpl.ID)
	if err != nil || st.Stock != 9 {
		t.Fatalf("cache stock %d (%v) after the repair, want the store's 9", st.Stock, err)
	}
	want := fmt.Sprintf("template=%d cache_stock=6 store_stock=9", tpl.ID)
	if !strings.Contains(logs.String(), want) {
		t.Errorf("no warning with %q in:\n%s", want, logs.String())
	}
	m := metric()
	for _, name := range []string{"quan_stock_drift ", "quan_stock_drift_templates ", "quan_holding_drift_users ", `quan_reconcile_runs_total{result="ok"} `, `quan_reconcile_runs_total{result="error"} 0`} {
		if !strings.Contains(m, name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
}

// startServeLogs is startServe writing its logs to logs.
func startServeLogs(t *testing.T, env map[string]string, logs *syncBuffer) *ServeCommand {
	t.Helper()
	m := &Main{Stdout: logs, Stderr: logs, Getenv: func(k string) string { return env[k] }}
	cmd := &ServeCommand{Main: m}
	if err := cmd.ParseFlags(nil); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Open(t.Context()); err != nil {
		cmd.Close()
		t.Fatalf("open: %v\n%s", err, logs.String())
	}
	t.Cleanup(func() {
		if err := cmd.Close(); err != nil {
			t.Error(err)
		}
	})
	return cmd
}

// waitUntil polls cond until it holds, failing after 30 seconds.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 30s, still waiting for %s", what)
		}
	}
}
