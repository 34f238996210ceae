package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/cmd/quan/internal/app"
)

// ctrlC is a command's stderr that presses Ctrl-C (cancels the command's
// context) when the command prints its first progress line: once its
// task runs, before it can end.
type ctrlC struct {
	syncBuffer
	cancel context.CancelFunc
}

var progressLineRE = regexp.MustCompile(`(?m)^task \d+ (pending|running):`)

func (c *ctrlC) Write(p []byte) (int, error) {
	n, err := c.syncBuffer.Write(p)
	if progressLineRE.MatchString(c.String()) {
		c.cancel()
	}
	return n, err
}

// interruptQuan runs quan args and presses Ctrl-C at its first progress
// line. It returns the command's error and stderr.
func interruptQuan(t *testing.T, env map[string]string, args ...string) (error, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stderr := &ctrlC{cancel: cancel}
	m := &Main{Stdout: &syncBuffer{}, Stderr: stderr, Getenv: func(k string) string { return env[k] }}
	err := m.Run(ctx, args)
	if err == nil {
		t.Fatalf("quan %s ended before Ctrl-C:\n%s", strings.Join(args, " "), stderr.String())
	}
	return err, stderr.String()
}

// runAll runs quan args and returns what it printed, on stdout and stderr
// together.
func runAll(t *testing.T, env map[string]string, args ...string) (string, error) {
	t.Helper()
	var out syncBuffer
	m := &Main{Stdout: &out, Stderr: &out, Getenv: func(k string) string { return env[k] }}
	err := m.Run(t.Context(), args)
	return out.String(), err
}

// localTasks returns the tasks of env's data folder, oldest first.
func localTasks(t *testing.T, env map[string]string) []*quan.Task {
	t.Helper()
	a, err := app.Open(t.Context(), app.Config{DataDir: env["QUAN_DATA"], StoreURL: "sqlite:", LogLevel: "warn"}, app.Local, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ts, _, err := a.Tasks.List(t.Context(), app.CLI, quan.TaskFilter{ShopNo: quan.AnyShop, Limit: quan.MaxPageSize})
	if err != nil {
		t.Fatal(err)
	}
	for i, j := 0, len(ts)-1; i < j; i, j = i+1, j-1 {
		ts[i], ts[j] = ts[j], ts[i]
	}
	return ts
}

// TestDemoInterrupted presses Ctrl-C during quan demo: it says where its
// task stopped and what a rerun does; the task stays unfinished, its
// lease given up; the rerun resumes it to its end rather than start a
// second distribution (no second template, no second task), and every
// coupon the stock allows is issued once.
func TestDemoInterrupted(t *testing.T) {
	env := testEnv(t)
	const n = 300_000
	err, stderr := interruptQuan(t, env, "demo", "-n", fmt.Sprint(n))
	want := regexp.MustCompile(`^interrupted: task 1 \(demo\) stopped at \d+\.\d% \([\d,]+ rows done, [\d,]+ issued\) and stays unfinished; ` +
		`nothing is lost or issued twice: running the same command again resumes it$`)
	if !want.MatchString(err.Error()) {
		t.Fatalf("Ctrl-C said %q, want it to match %s\nstderr:\n%s", err, want, stderr)
	}
	ts := localTasks(t, env)
	if len(ts) != 1 || ts[0].Status != quan.TaskRunning || ts[0].LeaseUntil.After(time.Now()) {
		t.Fatalf("after Ctrl-C: %d tasks, the first %s with its lease until %v; want one, running, its lease given up", len(ts), ts[0].Status, ts[0].LeaseUntil)
	}

	out, err := runAll(t, env, "demo", "-n", fmt.Sprint(n))
	if err != nil {
		t.Fatalf("rerun: %v\n%s", err, out)
	}
	for _, w := range []string{"resuming task 1 (demo), left unfinished at ", "task 1 succeeded", "issued    294,000\n"} {
		if !strings.Contains(out, w) {
			t.Errorf("the rerun did not say %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "template 2") || strings.Contains(out, "task 2") {
		t.Errorf("the rerun started another distribution:\n%s", out)
	}
	ts = localTasks(t, env)
	if len(ts) != 1 || ts[0].Status != quan.TaskSucceeded || ts[0].Counts.Issued != n-n/50 {
		t.Fatalf("after the rerun: %d tasks, the first %s with %d issued; want one, succeeded, with %d", len(ts), ts[0].Status, ts[0].Counts.Issued, n-n/50)
	}
}

// TestDistributeInterrupted presses Ctrl-C during quan distribute on a
// data folder: a rerun of the same command resumes the task; another
// distribution is refused while one is unfinished, naming it, unless
// --new, which starts it beside the unfinished one (both end).
func TestDistributeInterrupted(t *testing.T) {
	env := testEnv(t)
	tpl := localTemplate(t, env, 10_000_000, 1)
	dir := t.TempDir()
	file := func(name string, first, n int) string {
		var b strings.Builder
		b.WriteString("userId\n")
		for u := first; u < first+n; u++ {
			fmt.Fprintf(&b, "%d\n", u)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	const n = 150_000
	a, b, c := file("a.csv", 1, n), file("b.csv", n+1, n), file("c.csv", 2*n+1, 1000)
	args := func(f string, more ...string) []string {
		return append([]string{"distribute", "--template", fmt.Sprint(tpl.ID), f}, more...)
	}

	err, stderr := interruptQuan(t, env, args(a)...)
	if !strings.Contains(err.Error(), "interrupted: task 1 (a.csv) stopped at ") ||
		!strings.HasSuffix(err.Error(), "stays unfinished; nothing is lost or issued twice: running the same command again resumes it") {
		t.Fatalf("Ctrl-C said %q\nstderr:\n%s", err, stderr)
	}
	out, err := runAll(t, env, args(a)...)
	if err != nil || !strings.Contains(out, "resuming task 1 (a.csv), left unfinished at ") || !strings.Contains(out, "task 1 succeeded") ||
		!regexp.MustCompile(`issued\s+150,000\n`).MatchString(out) {
		t.Fatalf("the rerun: %v\n%s", err, out)
	}

	interruptQuan(t, env, args(b)...)
	_, err = runAll(t, env, args(c)...)
	if err == nil || !strings.Contains(err.Error(), "distribute: task 2 (b.csv, template 1) is unfinished in "+env["QUAN_DATA"]) ||
		!strings.Contains(err.Error(), "add --new to start this distribution beside it") {
		t.Fatalf("another distribution while task 2 is unfinished: %v", err)
	}
	out, err = runAll(t, env, args(c, "--new")...)
	if err != nil || !strings.Contains(out, "task 2 (b.csv) is unfinished too: this run resumes it beside the new one") || !strings.Contains(out, "task 3 succeeded") {
		t.Fatalf("--new: %v\n%s", err, out)
	}
	ts := localTasks(t, env)
	if len(ts) != 3 {
		t.Fatalf("%d tasks, want 3", len(ts))
	}
	for i, want := range []int64{n, n, 1000} {
		if ts[i].Status != quan.TaskSucceeded || ts[i].Counts.Issued != want {
			t.Errorf("task %d %s, %d issued; want succeeded, %d", ts[i].ID, ts[i].Status, ts[i].Counts.Issued, want)
		}
	}
}

// TestDistributeRemoteInterrupted presses Ctrl-C while quan distribute
// follows its task on a server: it says the server runs the task on, and
// a rerun follows that task rather than upload the file again.
func TestDistributeRemoteInterrupted(t *testing.T) {
	env := testEnv(t)
	// No runner: the task stays pending for as long as the test looks.
	srv := startServe(t, env, "--runner=false")
	tok := strings.TrimSpace(runQuan(t, env, "token --role merchant --shop 1"))
	tpl := localTemplate(t, env, 100, 1)
	file := filepath.Join(t.TempDir(), "users.csv")
	os.WriteFile(file, []byte("userId\n1\n2\n"), 0o600)
	args := []string{"distribute", "--server", srv.URL(), "--token", tok, "--template", fmt.Sprint(tpl.ID), file}

	err, _ := interruptQuan(t, env, args...)
	if !strings.HasPrefix(err.Error(), "interrupted: stopped following task 1 (users.csv) at 0.0% ") ||
		!strings.HasSuffix(err.Error(), "the server runs it on: running the same command again follows it while it runs, and GET /api/v1/tasks/1 shows it") {
		t.Fatalf("Ctrl-C said %q", err)
	}
	_, stderr := interruptQuan(t, env, args...)
	if !strings.Contains(stderr, "following task 1 (users.csv), which the server runs already, at 0.0% ") {
		t.Fatalf("the rerun did not follow task 1:\n%s", stderr)
	}
	ts := localTasks(t, env)
	if len(ts) != 1 {
		t.Fatalf("%d tasks on the server, want the one", len(ts))
	}
}
