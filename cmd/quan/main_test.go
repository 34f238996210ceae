package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/cmd/quan/internal/cli"
)

// testEnv is a QUAN_* environment with a fresh data folder and a free port.
func testEnv(t *testing.T) map[string]string {
	t.Helper()
	return map[string]string{
		"QUAN_DATA":        t.TempDir(),
		"QUAN_ADDR":        "127.0.0.1:0",
		"QUAN_ADMIN_ADDR":  "127.0.0.1:0",
		"QUAN_LOG_LEVEL":   "warn",
		"QUAN_DRAIN_DELAY": "0",
	}
}

// syncBuffer is a bytes.Buffer safe for a server's logs and a test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startServe opens `quan serve` configured by env and args and closes it
// at cleanup.
func startServe(t *testing.T, env map[string]string, args ...string) *ServeCommand {
	t.Helper()
	srv, _ := startServeLogged(t, env, args...)
	return srv
}

// startServeLogged is startServe, returning serve's log too.
func startServeLogged(t *testing.T, env map[string]string, args ...string) (*ServeCommand, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	m := &Main{Stdout: logs, Stderr: logs, Getenv: func(k string) string { return env[k] }}
	cmd := &ServeCommand{Main: m}
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Open(context.Background()); err != nil {
		cmd.Close()
		t.Fatalf("open: %v\n%s", err, logs.String())
	}
	t.Cleanup(func() {
		if err := cmd.Close(); err != nil {
			t.Error(err)
		}
	})
	return cmd, logs
}

func TestServeKeepsSecretAndData(t *testing.T) {
	env := testEnv(t)
	srv := startServe(t, env)
	tok := runQuan(t, env, "token --role merchant --shop 7")
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	secret, err := os.ReadFile(filepath.Join(env["QUAN_DATA"], "jwt-secret"))
	if err != nil || len(strings.TrimSpace(string(secret))) < 32 {
		t.Fatalf("secret file: %q, %v", secret, err)
	}
	info, _ := os.Stat(filepath.Join(env["QUAN_DATA"], "jwt-secret"))
	if info.Mode().Perm() != 0o600 {
		t.Fatalf("secret file mode %v", info.Mode())
	}

	// A restarted server accepts the token minted before.
	srv = startServe(t, env)
	req, _ := http.NewRequest("GET", srv.URL()+"/api/v1/templates", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(tok))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("token after restart: %d", res.StatusCode)
	}
	res, err = http.Get(srv.URL() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("readyz %d", res.StatusCode)
	}
}

// TestServeDrains cancels serve's context while a request is in flight: the
// request completes and Run returns nil.
func TestServeDrains(t *testing.T) {
	env := testEnv(t)
	logs := &syncBuffer{}
	m := &Main{Stdout: logs, Stderr: logs, Getenv: func(k string) string { return env[k] }}
	cmd := &ServeCommand{Main: m}
	if err := cmd.ParseFlags([]string{"--shutdown-timeout", "10s"}); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	tok := strings.TrimSpace(runQuan(t, env, "token --role merchant --shop 7"))
	// A slow client: the request is in flight until its body arrives.
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("POST", cmd.URL()+"/api/v1/templates", pr)
		req.Header.Set("Authorization", "Bearer "+tok)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- -1
			return
		}
		res.Body.Close()
		done <- res.StatusCode
	}()
	pw.Write([]byte(`{"name":`))
	time.Sleep(100 * time.Millisecond) // let the request reach the handler
	closed := make(chan error, 1)
	go func() { closed <- cmd.Close() }()
	select {
	case <-closed:
		t.Fatal("Close returned while a request was in flight")
	case <-time.After(200 * time.Millisecond):
	}
	pw.Write([]byte(`"x"}`))
	pw.Close()
	if status := <-done; status != http.StatusBadRequest {
		t.Fatalf("in-flight request got %d, want its normal 400", status)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}

func TestFlagsAndEnv(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string // error text
		code int    // exit status
	}{
		{"UnknownCommand", []string{"frobnicate"}, nil, `unknown command "frobnicate"`, 2},
		{"UnknownFlag", []string{"demo", "--frobnicate"}, nil, "flag provided but not defined: -frobnicate", 2},
		{"UnknownStore", []string{"serve", "--store", "oracle://x"}, nil, `unknown scheme "oracle"`, 1},
		{"BadLogLevelFromEnv", []string{"serve"}, map[string]string{"QUAN_LOG_LEVEL": "loud"}, `--log-level "loud": use debug, info, warn or error`, 2},
		{"BadDurationFromEnv", []string{"serve"}, map[string]string{"QUAN_SHUTDOWN_TIMEOUT": "soon"}, "QUAN_SHUTDOWN_TIMEOUT", 2},
		{"PersistRateTooLow", []string{"serve", "--claim-persist-rate", "10"}, nil, "--claim-persist-rate 10: want 0 (no limit) or at least 1000", 2},
		{"PersistRateFromEnv", []string{"serve"}, map[string]string{"QUAN_CLAIM_PERSIST_RATE": "-5"}, "--claim-persist-rate -5", 2},
		{"PromoWrongCodesNegative", []string{"serve", "--promo-wrong-codes", "-1"}, nil, "--promo-wrong-codes -1 --promo-wrong-window 10m0s: want 1 or more", 2},
		{"ShortSecret", []string{"serve", "--jwt-secret", "short"}, nil, "at least 32", 1},
		{"TokenMerchantWithoutShop", []string{"token", "--role", "merchant"}, nil, "shop number", 1},
		{"TokenUnknownRole", []string{"token", "--role", "root"}, nil, "unknown role", 1},
		{"TokenStrayArgument", []string{"token", "extra"}, nil, "unexpected arguments", 2},
		{"DemoOutput", []string{"demo", "-n", "5", "--output", "yaml"}, nil, `--output "yaml": use text or json`, 2},
		{"DistributeNoTemplate", []string{"distribute", "users.csv"}, nil, "--template is required", 2},
		{"WorkerNothingToDo", []string{"worker", "--runner=false"}, nil, "--runner=false leaves a worker nothing to do without a --bus nats://", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := testEnv(t)
			for k, v := range tt.env {
				env[k] = v
			}
			var out bytes.Buffer
			m := &Main{Stdout: &out, Stderr: &out, Getenv: func(k string) string { return env[k] }}
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // serve would return at once if it started
			err := m.Run(ctx, tt.args)
			if err == nil || !strings.Contains(err.Error()+out.String(), tt.want) {
				t.Fatalf("err %v, output %q; want %q", err, out.String(), tt.want)
			}
			if got := cli.ExitCode(err); got != tt.code {
				t.Errorf("exit status %d for %v, want %d", got, err, tt.code)
			}
		})
	}
	t.Run("FlagBeatsEnv", func(t *testing.T) {
		env := testEnv(t)
		env["QUAN_LOG_LEVEL"] = "loud"
		var out bytes.Buffer
		m := &Main{Stdout: &out, Stderr: &out, Getenv: func(k string) string { return env[k] }}
		cmd := &ServeCommand{Main: m}
		if err := cmd.ParseFlags([]string{"--log-level", "error"}); err != nil {
			t.Fatal(err)
		}
		if cmd.Config.LogLevel != "error" || cmd.Config.DataDir != env["QUAN_DATA"] {
			t.Fatalf("log level %q data %q", cmd.Config.LogLevel, cmd.Config.DataDir)
		}
		env["QUAN_CLAIM_PERSIST_RATE"] = "5000"
		cmd = &ServeCommand{Main: m}
		if err := cmd.ParseFlags(nil); err != nil || cmd.Config.Claims.PersistRate != 5000 {
			t.Fatalf("QUAN_CLAIM_PERSIST_RATE=5000: persist rate %v, %v", cmd.Config.Claims.PersistRate, err)
		}
	})
	t.Run("ServeReturnsOnCancel", func(t *testing.T) {
		env := testEnv(t)
		m := &Main{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}, Getenv: func(k string) string { return env[k] }}
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { errc <- m.Run(ctx, []string{"serve"}) }()
		time.Sleep(100 * time.Millisecond)
		cancel()
		select {
		case err := <-errc:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("serve did not return after its context ended")
		}
	})
}

// TestServeExportsCodes: `quan serve` wires the codes export, so a
// merchant downloads a batch's codes as .xlsx as well as .csv.
func TestServeExportsCodes(t *testing.T) {
	env := testEnv(t)
	srv := startServe(t, env)
	a := srv.App()
	tpl, err := a.CreateDemoTemplate(t.Context(), 10)
	if err != nil {
		t.Fatal(err)
	}
	tok := strings.TrimSpace(runQuan(t, env, "token --role merchant --shop 1"))
	call := func(method, path, body string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL()+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { res.Body.Close() })
		return res
	}
	res := call("POST", fmt.Sprintf("/api/v1/templates/%d/code-batches", tpl.ID), `{"count":3}`)
	if res.StatusCode != http.StatusAccepted {
		t.Fatalf("create a code batch: %s", res.Status)
	}
	batch := res.Header.Get("Location")
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var b quan.CodeBatch
		if err := json.NewDecoder(call("GET", batch, "").Body).Decode(&b); err != nil {
			t.Fatal(err)
		}
		if b.Status == quan.CodeBatchReady {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("batch not ready: %+v", b)
		}
	}
	for _, ext := range []string{"csv", "xlsx"} {
		res := call("GET", batch+"/codes."+ext, "")
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK || len(body) == 0 {
			t.Errorf("codes.%s: %s, %d bytes", ext, res.Status, len(body))
		}
	}
}

// readyChecks returns what /readyz of srv answered.
func readyChecks(t *testing.T, srv *ServeCommand) (int, map[string]string) {
	t.Helper()
	res, err := http.Get(srv.URL() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body struct {
		Checks map[string]string `json:"checks"`
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, body.Checks
}

// TestReadyzChecksBackends: serve's /readyz checks every backend it uses
// and the data folder: the store and the embedded bus by default; the
// store, Redis and NATS in production.
func TestReadyzChecksBackends(t *testing.T) {
	t.Run("Embedded", func(t *testing.T) {
		code, checks := readyChecks(t, startServe(t, testEnv(t)))
		if code != http.StatusOK || len(checks) != 3 || checks["store"] != "ok" || checks["bus"] != "ok" || checks["data"] != "ok" {
			t.Fatalf("readyz %d %v", code, checks)
		}
	})
	t.Run("Production", func(t *testing.T) {
		env, _ := productionEnv(t)
		code, checks := readyChecks(t, startServe(t, env))
		if code != http.StatusOK || len(checks) != 4 || checks["store"] != "ok" || checks["cache"] != "ok" || checks["bus"] != "ok" || checks["data"] != "ok" {
			t.Fatalf("readyz %d %v", code, checks)
		}
	})
}

// TestReadyzDataFolder: /readyz checks that the data folder can be
// written: with the folder gone (moved away, as an unmounted volume),
// it answers 503 naming "data"; once it is back, 200.
func TestReadyzDataFolder(t *testing.T) {
	env := testEnv(t)
	srv := startServe(t, env)
	if code, checks := readyChecks(t, srv); code != http.StatusOK || checks["data"] != "ok" {
		t.Fatalf("readyz: %d %v", code, checks)
	}
	dir := env["QUAN_DATA"]
	if err := os.Rename(dir, dir+".away"); err != nil {
		t.Fatal(err)
	}
	code, checks := readyChecks(t, srv)
	if err := os.Rename(dir+".away", dir); err != nil {
		t.Fatal(err)
	}
	if code != http.StatusServiceUnavailable || checks["data"] != "unavailable" || checks["store"] != "ok" {
		t.Errorf("readyz without the data folder: %d %v, want 503 naming data", code, checks)
	}
	if code, checks := readyChecks(t, srv); code != http.StatusOK || checks["data"] != "ok" {
		t.Errorf("readyz with the data folder back: %d %v", code, checks)
	}
}

// TestServeLogsNoNATSBanner: at info, serve's log holds quan's lines, not
// the embedded NATS server's start-up banner, which goes to debug.
func TestServeLogsNoNATSBanner(t *testing.T) {
	for _, level := range []string{"info", "debug"} {
		env := testEnv(t)
		env["QUAN_LOG_LEVEL"] = level
		logs := &syncBuffer{}
		cmd := &ServeCommand{Main: &Main{Stdout: logs, Stderr: logs, Getenv: func(k string) string { return env[k] }}}
		if err := cmd.ParseFlags(nil); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Open(context.Background()); err != nil {
			cmd.Close()
			t.Fatal(err)
		}
		cmd.Close()
		banner := strings.Contains(logs.String(), "Starting nats-server")
		if !strings.Contains(logs.String(), "quan serving") || banner != (level == "debug") {
			t.Errorf("at %s: the NATS banner shown %t, in:\n%s", level, banner, logs.String())
		}
	}
}

// TestAdminListener: serve's admin listener has the metrics, moving with
// a claim, the probes and the profiler; a worker's has them too, and two
// processes cannot share one address.
func TestAdminListener(t *testing.T) {
	env := testEnv(t)
	srv := startServe(t, env)
	if srv.AdminURL() == "" {
		t.Fatal("no admin listener")
	}
	get := func(url string) (int, string) {
		t.Helper()
		res, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
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
	code, metrics := get(srv.AdminURL() + "/metrics")
	for _, want := range []string{`quan_claims_total{result="accepted"} 1`, `quan_claims_total{result="sold_out"} 0`, "go_goroutines ", "process_resident_memory_bytes "} {
		if code != http.StatusOK || !strings.Contains(metrics, want) {
			t.Errorf("metrics %d lack %q", code, want)
		}
	}
	if code, body := get(srv.AdminURL() + "/debug/pprof/"); code != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Errorf("pprof index %d", code)
	}
	if code, _ := get(srv.URL() + "/debug/pprof/"); code != http.StatusNotFound {
		t.Errorf("the profiler on the API's listener: %d", code)
	}

	wenv := testEnv(t)
	worker := &ServeCommand{Main: &Main{Stdout: io.Discard, Stderr: io.Discard, Getenv: func(k string) string { return wenv[k] }}, Worker: true}
	if err := worker.ParseFlags(nil); err != nil {
		t.Fatal(err)
	}
	if err := worker.Open(t.Context()); err != nil {
		worker.Close()
		t.Fatal(err)
	}
	defer worker.Close()
	for _, p := range []string{"/healthz", "/readyz"} {
		if code, body := get(worker.AdminURL() + p); code != http.StatusOK || !strings.Contains(body, `"ok"`) {
			t.Errorf("worker %s: %d %s", p, code, body)
		}
	}

	taken := testEnv(t)
	taken["QUAN_ADMIN_ADDR"] = strings.TrimPrefix(srv.AdminURL(), "http://")
	err = (&Main{Stdout: io.Discard, Stderr: io.Discard, Getenv: func(k string) string { return taken[k] }}).Run(t.Context(), []string{"worker"})
	if err == nil || !strings.Contains(err.Error(), "--admin-addr") || !strings.Contains(err.Error(), "its own --admin-addr") {
		t.Errorf("a second process on the admin address: %v", err)
	}
}
