package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/quanhq/quan/cmd/quan/internal/cli"
)

// TestBinaryConventions runs the built binary as a user would and checks
// its version and exit statuses: 0 for help and version, 2 for a command
// line that cannot run, 1 for a failure.
func TestBinaryConventions(t *testing.T) {
	bin := buildQuan(t)
	data := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string // in stdout+stderr
	}{
		{"Version", []string{"version"}, 0, "quan "},
		{"VersionFlag", []string{"--version"}, 0, "quan "},
		{"Help", []string{"--help"}, 0, "Usage:"},
		{"CommandHelp", []string{"distribute", "-h"}, 0, "$QUAN_TEMPLATE"},
		{"NoCommand", nil, 2, "Usage:"},
		{"UnknownFlag", []string{"gen-users", "--frobnicate"}, 2, "flag provided but not defined"},
		{"MissingFile", []string{"distribute", "--data", data, "--template", "1", data + "/none.csv"}, 1, "none.csv"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, tc.args...)
			cmd.Dir = data
			out, err := cmd.CombinedOutput()
			code := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.code || !strings.Contains(string(out), tc.want) {
				t.Fatalf("quan %q: exit %d, output:\n%s\nwant exit %d and %q", tc.args, code, out, tc.code, tc.want)
			}
			if strings.Count(string(out), "quan:") > 1 {
				t.Errorf("a prefix repeated in:\n%s", out)
			}
		})
	}
	// quan version prints the revision go build stamped into the binary,
	// as `go version -m` reads it, or says it has none.
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	info, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	want := "revision unknown"
	if m := regexp.MustCompile(`vcs\.revision=(\S+)`).FindSubmatch(info); m != nil {
		want = "revision " + string(m[1])
	}
	if !strings.Contains(string(out), want) {
		t.Errorf("quan version printed %q, want %q (go version -m:\n%s)", out, want, info)
	}
}

// TestDemoJSON runs the demo with --output json and --quiet: stdout is the
// summary alone, as JSON, and stderr shows no progress.
func TestDemoJSON(t *testing.T) {
	env := testEnv(t)
	var stdout, stderr bytes.Buffer
	m := &Main{Stdout: &stdout, Stderr: &stderr, Getenv: func(k string) string { return env[k] }}
	if err := m.Run(context.Background(), []string{"demo", "-n", "2000", "--output", "json", "--quiet"}); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	var sum struct {
		Task     int64  `json:"task"`
		Status   string `json:"status"`
		Rows     int64  `json:"rows"`
		Issued   int64  `json:"issued"`
		Failed   int64  `json:"failed"`
		FailedBy struct {
			Duplicate int64 `json:"duplicate_in_file"`
		} `json:"failedByCause"`
		Report     string  `json:"report"`
		Wall       float64 `json:"wallSeconds"`
		TemplateID int64   `json:"templateId"`
	}
	dec := json.NewDecoder(&stdout)
	dec.DisallowUnknownFields()
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		t.Fatalf("stdout is not the JSON summary: %v\n%s", err, stdout.String())
	}
	if sum.Status != "succeeded" || sum.Rows != 2000 || sum.Issued+sum.Failed != 2000 || sum.Issued == 0 || sum.Wall <= 0 || sum.TemplateID == 0 {
		t.Errorf("summary %+v", sum)
	}
	if sum.Failed > 0 && sum.Report == "" {
		t.Errorf("failed rows but no report: %+v", sum)
	}
	if strings.Contains(stderr.String(), "rows/s") {
		t.Errorf("--quiet, yet progress on stderr:\n%s", stderr.String())
	}
}

// TestDistributeProgressOffTerminal checks that progress written to a
// file or pipe comes as plain lines, without the bar's carriage returns.
func TestDistributeProgressOffTerminal(t *testing.T) {
	env := testEnv(t)
	var stdout, stderr bytes.Buffer
	m := &Main{Stdout: &stdout, Stderr: &stderr, Getenv: func(k string) string { return env[k] }}
	if err := m.Run(context.Background(), []string{"demo", "-n", "3000"}); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if strings.Contains(stderr.String(), "\r") {
		t.Errorf("carriage returns off a terminal:\n%q", stderr.String())
	}
	if !regexp.MustCompile(`(?m)^task \d+ succeeded: 100\.0%  3,000 rows`).MatchString(stderr.String()) {
		t.Errorf("no final progress line in:\n%s", stderr.String())
	}
	if !strings.Contains(stdout.String(), "issued") {
		t.Errorf("no text summary on stdout:\n%s", stdout.String())
	}
}

func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{cli.ErrHelp, 0},
		{cli.Usagef("bad"), 2},
		{errors.New("failed"), 1},
	} {
		if got := cli.ExitCode(tc.err); got != tc.want {
			t.Errorf("ExitCode(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

// TestErrorHasNoRepeatedPrefix checks that a domain error reaches the user
// once prefixed: main adds "quan:", nothing under it does again.
func TestErrorHasNoRepeatedPrefix(t *testing.T) {
	env := testEnv(t)
	file := t.TempDir() + "/users.csv"
	if err := os.WriteFile(file, []byte("userId\n1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	m := &Main{Stdout: &out, Stderr: &out, Getenv: func(k string) string { return env[k] }}
	err := m.Run(context.Background(), []string{"distribute", "--template", "7", file})
	want := "distribute " + file + ": invalid: the task has invalid fields: templateId: no template 7 in your shop"
	if err == nil || err.Error() != want {
		t.Fatalf("err %v, want %q", err, want)
	}
	if cli.ExitCode(err) != 1 {
		t.Errorf("exit status %d, want 1", cli.ExitCode(err))
	}
}

// TestHelpAndUsageErrors runs the built binary as a user would: every
// command's help (-h, --help and quan help COMMAND) is on stdout with
// exit status 0, and a command line that cannot run gets its error and
// one line saying where the help is, on stderr, with exit status 2 — not
// the help itself.
func TestHelpAndUsageErrors(t *testing.T) {
	bin := buildQuan(t)
	dir := t.TempDir()
	run := func(args ...string) (stdout, stderr string, code int) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "QUAN_DATA="+dir)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return o.String(), e.String(), code
	}
	// Every command and sub-command, as quan -h lists them.
	commands := [][]string{
		{"demo"}, {"serve"}, {"worker"}, {"distribute"}, {"gen-users"}, {"token"},
		{"user"}, {"user", "add"}, {"user", "list"}, {"user", "disable"}, {"user", "enable"}, {"user", "passwd"},
		{"migrate"}, {"sms-sink"}, {"version"}, {"help"},
		{"bench"}, {"bench", "distribute"}, {"bench", "read"}, {"bench", "claim"}, {"bench", "wallet"},
		{"bench", "wallet", "lock"}, {"bench", "wallet", "sweep"}, {"bench", "wallet", "remind"},
		{"bench", "stats"}, {"bench", "notify"},
	}
	for _, c := range commands {
		name := strings.Join(c, " ")
		t.Run("Help/"+name, func(t *testing.T) {
			for _, args := range [][]string{append(slices.Clone(c), "-h"), append(slices.Clone(c), "--help"), append([]string{"help"}, c...)} {
				stdout, stderr, code := run(args...)
				if code != 0 || stderr != "" || !strings.Contains(stdout, "Usage") {
					t.Errorf("quan %s: exit %d, stdout:\n%s\nstderr:\n%s\nwant exit 0 and the usage on stdout alone", strings.Join(args, " "), code, stdout, stderr)
				}
			}
		})
	}
	for _, c := range commands {
		if c[0] == "help" || len(c) == 1 && (c[0] == "bench" || c[0] == "user") || slices.Equal(c, []string{"bench", "wallet"}) {
			continue // no flags: their usage errors are below
		}
		name := strings.Join(c, " ")
		t.Run("UnknownFlag/"+name, func(t *testing.T) {
			args := append(slices.Clone(c), "--frobnicate")
			stdout, stderr, code := run(args...)
			want := "quan: " + name + ": flag provided but not defined: -frobnicate\nRun 'quan " + name + " -h' for its usage.\n"
			if c[0] == "version" {
				want = "quan: version: unexpected arguments [\"--frobnicate\"]\nRun 'quan version -h' for its usage.\n"
			}
			if code != 2 || stdout != "" || stderr != want {
				t.Errorf("quan %s: exit %d, stdout %q, stderr:\n%s\nwant exit 2 and on stderr:\n%s", strings.Join(args, " "), code, stdout, stderr, want)
			}
		})
	}
	for _, tc := range []struct{ args, want string }{
		{"nosuch", "quan: unknown command \"nosuch\"\nRun 'quan -h' for the commands.\n"},
		{"help nosuch", "quan: unknown command \"nosuch\"\nRun 'quan -h' for the commands.\n"},
		{"bench", "quan: bench: say what to measure: distribute, read, claim, wallet, stats, shopper, notify or conns\nRun 'quan bench -h' for its usage.\n"},
		{"user", "quan: user: want an action: add, list, disable, enable or passwd\nRun 'quan user -h' for its usage.\n"},
		{"distribute users.csv", "quan: distribute: --template is required\nRun 'quan distribute -h' for its usage.\n"},
		{"gen-users -n -1", "quan: gen-users: -n must be ≥ 0 and -dup, -invalid shares in [0, 1) summing below 1\nRun 'quan gen-users -h' for its usage.\n"},
	} {
		t.Run("UsageError/"+tc.args, func(t *testing.T) {
			stdout, stderr, code := run(strings.Fields(tc.args)...)
			if code != 2 || stdout != "" || stderr != tc.want {
				t.Errorf("quan %s: exit %d, stdout %q, stderr:\n%s\nwant exit 2 and on stderr:\n%s", tc.args, code, stdout, stderr, tc.want)
			}
		})
	}
}
