package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/cmd/quan/internal/app"
	"github.com/quanhq/quan/cmd/quan/internal/cli"
	"github.com/quanhq/quan/mysql/mysqltest"
	"github.com/quanhq/quan/sheet"
	"github.com/quanhq/quan/tasks"
)

// run runs quan with args in env and returns its stdout; it fails the test
// if the command fails unless wantErr.
func run(t *testing.T, env map[string]string, now func() time.Time, args ...string) (string, error) {
	t.Helper()
	var stdout, stderr syncBuffer
	m := &Main{Stdout: &stdout, Stderr: &stderr, Getenv: func(k string) string { return env[k] }, Now: now}
	err := m.Run(context.Background(), args)
	if testing.Verbose() {
		t.Logf("quan %s:\n%s%s", strings.Join(args, " "), stdout.String(), stderr.String())
	}
	return stdout.String(), err
}

// localTemplate creates an active template in env's data folder.
func localTemplate(t *testing.T, env map[string]string, stock, limit int64) *quan.Template {
	t.Helper()
	a, err := app.Open(context.Background(), app.Config{DataDir: env["QUAN_DATA"], StoreURL: cmp.Or(env["QUAN_STORE"], "sqlite:"), LogLevel: "warn"}, app.Local, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	tpl, err := a.CreateDemoTemplate(context.Background(), stock)
	if err != nil {
		t.Fatal(err)
	}
	if limit != 1 {
		t.Fatal("localTemplate makes limit-1 templates only")
	}
	return tpl
}

// causesFile writes an xlsx with one row of every cause: user 900 must
// hold the coupon already and the template have 3 coupons left.
func causesFile(t *testing.T, dir string) string {
	t.Helper()
	f := excelize.NewFile()
	defer f.Close()
	rows := [][]any{
		{"用户ID", "手机号"},
		{"101", "13800000001"},      // 2 issued
		{"abc", "13800000002"},      // 3 invalid_id
		{"101", "13800000003"},      // 4 duplicate_in_file
		{"900", "13800000004"},      // 5 limit_reached
		{1234567890123456789.0, ""}, // 6 inexact_number
		{"102", ""},                 // 7 issued
		{"103", ""},                 // 8 issued
		{"104", ""},                 // 9 out_of_stock
	}
	for i, r := range rows {
		cell, _ := excelize.CoordinatesToCellName(1, i+1)
		if err := f.SetSheetRow("Sheet1", cell, &r); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "causes.xlsx")
	if err := f.SaveAs(path); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestDistributeCLI(t *testing.T) {
	testDistributeCLI(t, testEnv(t))
}

// TestDistributeCLIOnMySQL runs the same distribution on MySQL: the
// embedded and production stores must give the same outcomes.
func TestDistributeCLIOnMySQL(t *testing.T) {
	env := testEnv(t)
	env["QUAN_STORE"] = mysqltest.URL(t)
	testDistributeCLI(t, env)
}

func testDistributeCLI(t *testing.T, env map[string]string) {
	tpl := localTemplate(t, env, 4, 1)
	dir := t.TempDir()
	first := filepath.Join(dir, "first.csv")
	// Two blank lines among the rows: counted apart, never failed.
	os.WriteFile(first, []byte("userId\r\n\r\n,\r\n900\r\n"), 0o600)
	out, err := run(t, env, nil, "distribute", "--template", fmt.Sprint(tpl.ID), first)
	if err != nil || !regexp.MustCompile(`rows\s+1\n\s+blank\s+2 \(rows with no user, skipped: not failures\)\n\s+issued\s+1\n\s+failed\s+0\n`).MatchString(out) {
		t.Fatalf("first distribution: %v\n%s", err, out)
	}

	out, err = run(t, env, nil, "distribute", causesFile(t, dir), "--template", fmt.Sprint(tpl.ID), "--name", "causes")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{
		`succeeded`, `rows\s+8\n`, `issued\s+3\n`, `failed\s+5\n`,
		`invalid_id\s+1\n`, `inexact_number\s+1\n`, `duplicate_in_file\s+1\n`, `limit_reached\s+1\n`, `out_of_stock\s+1\n`,
		`failure report: .*task-2-failures\.xlsx`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("summary lacks %s:\n%s", want, out)
		}
	}
	report := regexp.MustCompile(`failure report: (\S+)`).FindStringSubmatch(out)[1]
	f, err := excelize.OpenFile(report)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, _ := f.GetRows(f.GetSheetList()[0])
	var got []string
	for _, r := range rows[1:] {
		got = append(got, r[0]+":"+r[3])
	}
	if strings.Join(got, " ") != "3:invalid_id 4:duplicate_in_file 5:limit_reached 6:inexact_number 9:out_of_stock" {
		t.Fatalf("report rows %v", got)
	}

	t.Run("Retry", func(t *testing.T) { testRetryCLI(t, env, tpl, dir) })
	t.Run("PausedTemplate", func(t *testing.T) {
		a, err := app.Open(context.Background(), app.Config{DataDir: env["QUAN_DATA"], StoreURL: cmp.Or(env["QUAN_STORE"], "sqlite:"), LogLevel: "warn"}, app.Local, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = a.Templates.Pause(context.Background(), app.CLI, tpl.ID)
		a.Close()
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(dir, "paused.csv")
		os.WriteFile(file, []byte("userId\n555\n556\n"), 0o600)
		out, err := run(t, env, nil, "distribute", "--template", fmt.Sprint(tpl.ID), file)
		if err != nil || !regexp.MustCompile(`template_inactive\s+2\n`).MatchString(out) {
			t.Fatalf("%v\n%s", err, out)
		}
	})
	t.Run("Errors", func(t *testing.T) {
		for _, tt := range []struct {
			args []string
			says string
		}{
			{[]string{"distribute", first}, "--template is required"},
			{[]string{"distribute", "--template", "1"}, "want one FILE"},
			{[]string{"distribute", "--template", "1", filepath.Join(dir, "missing.csv")}, "no such file"},
			{[]string{"distribute", "--template", "999", first}, "no template 999"},
			{[]string{"distribute", "--template", fmt.Sprint(tpl.ID), "--notify", "fax", first}, "not a notification type"},
		} {
			_, err := run(t, env, nil, tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.says) {
				t.Errorf("quan %v: %v, want %q", tt.args, err, tt.says)
			}
		}
	})
}

func TestDistributeRemoteCLI(t *testing.T) {
	env := testEnv(t)
	srv := startServe(t, env)
	tok := strings.TrimSpace(runQuan(t, env, "token --role merchant --shop 1"))
	tpl := localTemplate(t, env, 100, 1)
	file := filepath.Join(t.TempDir(), "users.csv")
	os.WriteFile(file, []byte("user_id\n1\n\n2\n2\nbad\n"), 0o600)
	out, err := run(t, env, nil, "distribute", "--server", srv.URL(), "--token", tok, "--template", fmt.Sprint(tpl.ID), file)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{`succeeded`, `rows\s+4\n`, `blank\s+1 `, `issued\s+2\n`, `duplicate_in_file\s+1\n`, `invalid_id\s+1\n`, `failure report: http://.*/api/v1/tasks/1/failures.xlsx`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("summary lacks %s:\n%s", want, out)
		}
	}
	_, err = run(t, env, nil, "distribute", "--server", srv.URL(), "--token", "forged", "--template", fmt.Sprint(tpl.ID), file)
	if err == nil || !strings.Contains(err.Error(), "401 unauthorized") {
		t.Fatalf("bad token: %v", err)
	}
}

func TestGenUsersCLI(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"u.xlsx", "u.csv", "shared.xlsx"} {
		args := []string{"gen-users", "-n", "500", "--dup", "0.1", "--invalid", "0.1", "-o", filepath.Join(dir, name)}
		if name == "shared.xlsx" {
			args = append(args, "--shared")
		}
		out, err := run(t, nil, nil, args...)
		if err != nil || !strings.Contains(out, "500 rows") {
			t.Fatalf("%v: %v %s", args, err, out)
		}
		n, err := sheet.Count(context.Background(), filepath.Join(dir, name), sheet.Options{})
		if err != nil || n != 500 {
			t.Fatalf("%s: %d rows, %v", name, n, err)
		}
	}
	if _, err := run(t, nil, nil, "gen-users", "-o", filepath.Join(dir, "u.txt")); err == nil {
		t.Fatal("a .txt output was accepted")
	}
}

func TestDemoCLI(t *testing.T) {
	env := testEnv(t)
	out, err := run(t, env, nil, "demo", "-n", "3000")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{`template 1: `, `stock 2,940`, `generated .*demo-users-3000.xlsx: 3,000 rows`, `task 1 succeeded`,
		`rows\s+3,000\n`, `issued\s+2,9\d\d\n`, `duplicate_in_file`, `invalid_id`, `wall time`, `peak memory \d+ MB`, `failure report: `} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("demo output lacks %s:\n%s", want, out)
		}
	}
}

// clock is a test clock that tests move by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// TestScheduledTaskStartsAfterRestart schedules a task, stops the server,
// and starts it again after the task is due: the task runs.
func TestScheduledTaskStartsAfterRestart(t *testing.T) {
	env := testEnv(t)
	env["QUAN_TASK_POLL"] = "10ms"
	clk := &clock{now: time.Date(2026, 11, 11, 10, 0, 0, 0, time.UTC)}
	serve := func() *ServeCommand {
		logs := &syncBuffer{}
		m := &Main{Stdout: logs, Stderr: logs, Getenv: func(k string) string { return env[k] }, Now: clk.Now}
		cmd := &ServeCommand{Main: m}
		if err := cmd.ParseFlags(nil); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Open(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Close() })
		return cmd
	}
	srv := serve()
	tok := strings.TrimSpace(runQuan(t, env, "token --role merchant --shop 1 --ttl 1000h"))
	a, err := app.Open(context.Background(), app.Config{DataDir: env["QUAN_DATA"], StoreURL: "sqlite:", LogLevel: "warn", Now: clk.Now}, app.Local, nil)
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := a.CreateDemoTemplate(context.Background(), 10)
	a.Close()
	if err != nil {
		t.Fatal(err)
	}
	c := &apiClient{t: t, base: srv.URL(), token: tok}
	sendAt := clk.Now().Add(time.Hour)
	task := c.upload(map[string]string{"name": "at eleven", "templateId": fmt.Sprint(tpl.ID), "sendAt": sendAt.Format(time.RFC3339)},
		"u.csv", "userId\n1\n2\n")
	time.Sleep(100 * time.Millisecond) // the runner polls, finds nothing due
	if got := c.task(task); got.Status != quan.TaskPending {
		t.Fatalf("task started before it was due: %s", got.Status)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	clk.Set(sendAt.Add(time.Minute))
	srv = serve()
	c.base = srv.URL()
	got := c.wait(task)
	if got.Status != quan.TaskSucceeded || got.Counts.Issued != 2 || got.StartedAt.Before(sendAt) {
		t.Fatalf("scheduled task after restart: %+v", got)
	}
}

// apiClient calls a test server's task API.
type apiClient struct {
	t     *testing.T
	base  string
	token string
}

func (c *apiClient) upload(fields map[string]string, name, content string) int64 {
	c.t.Helper()
	var body bytes.Buffer
	mw := newMultipart(&body, fields, name, content)
	req, _ := http.NewRequest("POST", c.base+"/api/v1/tasks", &body)
	req.Header.Set("Content-Type", mw)
	var task struct{ ID int64 }
	if err := apiCall(req, c.token, http.StatusCreated, &task); err != nil {
		c.t.Fatal(err)
	}
	return task.ID
}

func (c *apiClient) task(id int64) *quan.Task {
	c.t.Helper()
	req, _ := http.NewRequest("GET", fmt.Sprintf("%s/api/v1/tasks/%d", c.base, id), nil)
	var task quan.Task
	if err := apiCall(req, c.token, http.StatusOK, &task); err != nil {
		c.t.Fatal(err)
	}
	return &task
}

func (c *apiClient) wait(id int64) *quan.Task {
	c.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if t := c.task(id); t.Status.Done() {
			return t
		}
	}
	c.t.Fatalf("task %d did not end", id)
	return nil
}

func TestDistributeBrokenFilesCLI(t *testing.T) {
	env := testEnv(t)
	tpl := localTemplate(t, env, 10, 1)
	dir := t.TempDir()
	valid := causesFile(t, dir)
	content, _ := os.ReadFile(valid)
	tests := []struct {
		name    string
		content []byte
		says    string
	}{
		{"notaspreadsheet.png", []byte("\x00\x01\x02\x03 binary"), "not an xlsx or csv"},
		{"corrupt.xlsx", []byte("<html><body>userId: session expired</body></html>\n"), "file: corrupt .xlsx: the file is named .xlsx but is not a zip archive"},
		{"truncated.xlsx", content[:len(content)/2], "file: corrupt .xlsx: the archive is truncated or damaged"},
		{"nouserid.csv", []byte("phone\n13800000000\n"), "user id"},
		{"empty.csv", nil, "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.name)
			os.WriteFile(path, tt.content, 0o600)
			_, err := run(t, env, nil, "distribute", "--template", fmt.Sprint(tpl.ID), path)
			if err == nil || !strings.Contains(strings.ToLower(err.Error()), tt.says) {
				t.Fatalf("err %v, want it to say %q", err, tt.says)
			}
		})
	}
}

// TestWorker runs a task created through the store by a `quan worker`,
// which serves no HTTP.
func TestWorker(t *testing.T) {
	env := testEnv(t)
	tpl := localTemplate(t, env, 10, 1)
	a, err := app.Open(context.Background(), app.Config{DataDir: env["QUAN_DATA"], StoreURL: "sqlite:", LogLevel: "warn"}, app.Local, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	f, err := a.Tasks.Upload(context.Background(), strings.NewReader("userId\n1\n2\n2\n"))
	if err != nil {
		t.Fatal(err)
	}
	task, err := a.Tasks.Create(context.Background(), app.CLI, tasks.NewTask{Name: "w", TemplateID: tpl.ID, FileName: "u.csv", File: f})
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		w := &Main{Stdout: &syncBuffer{}, Stderr: &syncBuffer{}, Getenv: func(k string) string { return env[k] }}
		done <- w.Run(ctx, []string{"worker", "--task-poll", "10ms"})
	}()
	var got *quan.Task
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if got, err = a.Tasks.Get(context.Background(), app.CLI, task.ID); err == nil && got.Status.Done() {
			break
		}
	}
	cancel()
	if got == nil || got.Status != quan.TaskSucceeded || got.Counts.Issued != 2 || got.Counts.Failed.Duplicate != 1 {
		t.Fatalf("task after the worker: %+v", got)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("worker: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the worker did not stop when its context ended")
	}
	if _, err := run(t, env, nil, "worker", "--addr", ":1"); err == nil {
		t.Fatal("a worker accepted --addr: it serves no HTTP")
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"mysql://root:s3cret@db:3306/quan": "mysql://root:xxxxx@db:3306/quan",
		"mysql://root@db:3306/quan":        "mysql://root@db:3306/quan",
		"sqlite:":                          "sqlite:",
	} {
		if got := app.Redact(in); got != want {
			t.Errorf("redact(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestBenchDistributeCLI(t *testing.T) {
	out, err := run(t, testEnv(t), nil, "bench", "distribute", "-n", "3000")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !regexp.MustCompile(`bench distribute: 3,000 users, 3,000 issued, wall \S+, [\d,]+ rows/s, peak RSS \d+ MB, chunk 50000, \d+ cores`).MatchString(out) {
		t.Fatalf("figures line: %s", out)
	}
	if !regexp.MustCompile(`raw-ingest floor 3,000 rows in \S+, [\d,]+ rows/s \(INSERTs of 500 rows on 1 connections .*distribution/floor [\d.]+×`).MatchString(out) {
		t.Fatalf("no SQLite floor line: %s", out)
	}
	if _, err := run(t, nil, nil, "bench", "nothing"); err == nil || !strings.Contains(err.Error(), "unknown benchmark") {
		t.Fatalf("unknown benchmark: %v", err)
	}
}

// TestBenchReadChildCLI runs one measurement of `quan bench read` the way
// the parent process runs it in a child.
func TestBenchReadChildCLI(t *testing.T) {
	file := filepath.Join(t.TempDir(), "u.xlsx")
	if _, err := sheet.GenerateFile(file, sheet.GenOptions{Rows: 2000, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, nil, nil, "bench", "read-child", "-reader", "quan", "-file", file)
	if err != nil || !strings.Contains(out, "2000") {
		t.Fatalf("%v: %s", err, out)
	}
}

// openLocal opens env's data folder as quan distribute does.
func openLocal(t *testing.T, env map[string]string) *app.App {
	t.Helper()
	a, err := app.Open(context.Background(), app.Config{DataDir: env["QUAN_DATA"], StoreURL: cmp.Or(env["QUAN_STORE"], "sqlite:"), LogLevel: "warn"}, app.Local, nil)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// testRetryCLI runs quan distribute --retry on the data folder: tpl's
// stock has run out, so 19-digit users are refused until it is raised,
// and the retry gives them their coupons with their ids intact.
func testRetryCLI(t *testing.T, env map[string]string, tpl *quan.Template, dir string) {
	ids := []string{"1234567890123456789", "9223372036854775807"}
	file := filepath.Join(dir, "long.csv")
	os.WriteFile(file, []byte("userId\n"+ids[0]+"\n"+ids[1]+"\nabc\n"+ids[0]+"\n"), 0o600)
	out, err := run(t, env, nil, "distribute", "--template", fmt.Sprint(tpl.ID), file)
	m := regexp.MustCompile(`task (\d+) succeeded`).FindStringSubmatch(out)
	if err != nil || m == nil || !regexp.MustCompile(`out_of_stock\s+2\n`).MatchString(out) {
		t.Fatalf("distribution with no stock left: %v\n%s", err, out)
	}
	first := m[1]

	a := openLocal(t, env)
	_, err = a.Templates.IncreaseStock(context.Background(), app.CLI, tpl.ID, 2)
	a.Close()
	if err != nil {
		t.Fatal(err)
	}
	out, err = run(t, env, nil, "distribute", "--retry", first)
	if err != nil {
		t.Fatalf("quan distribute --retry %s: %v\n%s", first, err, out)
	}
	for _, want := range []string{
		`succeeded`, `retry of task ` + first + `: 2 failed rows retried, 2 skipped as never retryable\n`,
		`skipped invalid_id\s+1\n`, `skipped duplicate_in_file\s+1\n`, `rows\s+2\n`, `issued\s+2\n`, `failed\s+0\n`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("summary lacks %s:\n%s", want, out)
		}
	}
	retry, _ := strconv.ParseInt(regexp.MustCompile(`task (\d+) succeeded`).FindStringSubmatch(out)[1], 10, 64)

	a = openLocal(t, env)
	defer a.Close()
	task, err := a.Tasks.Get(context.Background(), app.CLI, retry)
	if err != nil || fmt.Sprint(task.RetryOf) != first || task.TemplateID != tpl.ID {
		t.Fatalf("retry task %d: %+v, %v; want it to retry task %s", retry, task, err, first)
	}
	for _, id := range ids {
		user, _ := quan.ParseUserID(id)
		cs, err := a.Tasks.Tasks.(quan.CouponStore).UserCoupons(context.Background(), user, tpl.ID)
		if err != nil || len(cs) != 1 || cs[0].TaskID != retry {
			t.Fatalf("user %s holds %+v (%v), want one coupon of task %d", id, cs, err, retry)
		}
	}

	for _, tt := range []struct {
		args []string
		says string
		code int
	}{
		{[]string{"distribute", "--retry", fmt.Sprint(retry)}, "no failed row to retry", 1},
		{[]string{"distribute", "--retry", "999"}, "not_found", 1},
		{[]string{"distribute", "--retry", first, file}, "reads no file", 2},
		{[]string{"distribute", "--retry", first, "--dry-run"}, "--dry-run does not apply", 2},
		{[]string{"distribute", "--retry", "-3"}, "want the id of a finished task", 2},
		{[]string{"distribute", "--retry", first, "--template", "999"}, "no template 999", 1},
	} {
		_, err := run(t, env, nil, tt.args...)
		if err == nil || !strings.Contains(err.Error(), tt.says) || cli.ExitCode(err) != tt.code {
			t.Errorf("quan %v: %v (exit %d), want %q (exit %d)", tt.args, err, cli.ExitCode(err), tt.says, tt.code)
		}
	}
}

func TestDistributeRetryRemoteCLI(t *testing.T) {
	env := testEnv(t)
	srv := startServe(t, env)
	tok := strings.TrimSpace(runQuan(t, env, "token --role merchant --shop 1"))
	tpl := localTemplate(t, env, 1, 1)
	file := filepath.Join(t.TempDir(), "users.csv")
	os.WriteFile(file, []byte("user_id\n1234567890123456789\n9223372036854775807\n9223372036854775807\n"), 0o600)
	out, err := run(t, env, nil, "distribute", "--server", srv.URL(), "--token", tok, "--template", fmt.Sprint(tpl.ID), file)
	if err != nil || !regexp.MustCompile(`out_of_stock\s+1\n`).MatchString(out) {
		t.Fatalf("%v\n%s", err, out)
	}
	req, _ := http.NewRequest("POST", fmt.Sprintf("%s/api/v1/templates/%d/stock", srv.URL(), tpl.ID), strings.NewReader(`{"amount":1}`))
	var raised quan.Template
	if err := apiCall(req, tok, http.StatusOK, &raised); err != nil || raised.Stock != 1 {
		t.Fatalf("raise the stock: %+v, %v", raised, err)
	}

	out, err = run(t, env, nil, "distribute", "--server", srv.URL(), "--token", tok, "--retry", "1", "--name", "again", "--output", "json")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var sum struct {
		Task   int64
		Status quan.TaskStatus
		Issued int64
		Rows   int64
		Retry  struct {
			Of, Retried, SkippedTotal int64
			Skipped                   tasks.SkippedCounts
		}
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if sum.Status != quan.TaskSucceeded || sum.Task != 2 || sum.Rows != 1 || sum.Issued != 1 || sum.Retry.Of != 1 || sum.Retry.Retried != 1 ||
		sum.Retry.SkippedTotal != 1 || sum.Retry.Skipped.Duplicate != 1 {
		t.Fatalf("retry summary %+v\n%s", sum, out)
	}
	req, _ = http.NewRequest("GET", srv.URL()+"/api/v1/tasks/2", nil)
	var task quan.Task
	if err := apiCall(req, tok, http.StatusOK, &task); err != nil || task.RetryOf != 1 || task.Name != "again" {
		t.Fatalf("task 2: %+v, %v; want the retry of task 1 named again", task, err)
	}
	user, _ := quan.ParseUserID("9223372036854775807")
	a := openLocal(t, env)
	defer a.Close()
	if cs, err := a.Tasks.Tasks.(quan.CouponStore).UserCoupons(context.Background(), user, tpl.ID); err != nil || len(cs) != 1 || cs[0].TaskID != 2 {
		t.Fatalf("user %d holds %+v (%v), want one coupon of task 2", user, cs, err)
	}

	_, err = run(t, env, nil, "distribute", "--server", srv.URL(), "--token", tok, "--retry", "2")
	if err == nil || !strings.Contains(err.Error(), "400 invalid") || !strings.Contains(err.Error(), "no failed row") {
		t.Fatalf("retry of a task with no failed row: %v", err)
	}
}
