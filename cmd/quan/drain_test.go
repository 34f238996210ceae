package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestServeDrainDelay: once shutdown begins, /readyz on the API and on
// the admin listener answers 503 draining while requests are still
// served, until the drain delay ends; then the process drains and stops.
func TestServeDrainDelay(t *testing.T) {
	env := testEnv(t)
	logs := &syncBuffer{}
	cmd := &ServeCommand{Main: &Main{Stdout: logs, Stderr: logs, Getenv: func(k string) string { return env[k] }}}
	if err := cmd.ParseFlags([]string{"--drain-delay", "1h"}); err != nil {
		t.Fatal(err)
	}
	cmd.delayDone = make(chan struct{})
	if err := cmd.Open(context.Background()); err != nil {
		cmd.Close()
		t.Fatal(err)
	}
	get := func(url, token string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	tok := strings.TrimSpace(runQuan(t, env, "token --role merchant --shop 7"))
	api, admin := cmd.URL(), cmd.AdminURL()
	for _, u := range []string{api + "/readyz", admin + "/readyz"} {
		if code, body := get(u, ""); code != http.StatusOK {
			t.Fatalf("%s before shutdown: %d %s", u, code, body)
		}
	}

	closed := make(chan error, 1)
	go func() { closed <- cmd.Close() }() // what SIGTERM does (Main.Run)
	waitUntil(t, "/readyz to fail", func() bool { code, _ := get(api+"/readyz", ""); return code == http.StatusServiceUnavailable })
	for _, u := range []string{api + "/readyz", admin + "/readyz"} {
		if code, body := get(u, ""); code != http.StatusServiceUnavailable || !strings.Contains(body, `"draining"`) {
			t.Errorf("%s while draining: %d %s, want 503 draining", u, code, body)
		}
	}
	if code, body := get(api+"/api/v1/templates", tok); code != http.StatusOK {
		t.Errorf("a request during the drain delay: %d %s, want 200", code, body)
	}
	if code, _ := get(api+"/healthz", ""); code != http.StatusOK {
		t.Errorf("/healthz while draining: %d, want 200 (the process is alive)", code)
	}
	select {
	case err := <-closed:
		t.Fatalf("closed before the drain delay ended: %v", err)
	default:
	}
	close(cmd.delayDone)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(api + "/readyz"); err == nil {
		t.Error("the API still listens after the drain")
	}
}
