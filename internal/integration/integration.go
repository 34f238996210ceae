// Package integration is for the tests that need a service — MySQL,
// Redis, NATS, a browser, the registries client generators come from —
// named by a QUAN_TEST_* variable: without the
// variable they skip, and go test says so in one line per package,
// naming the suites skipped and the variables that run them, so that a
// bare `go test ./...` does not pass over them in silence. Only tests
// import it.
//
// A package whose tests call Need runs them through Main:
//
//	func TestMain(m *testing.M) { integration.Main(m) }
//
// go test shows a passing package's output only with -v, so Main writes
// its line to the terminal go test runs in (/dev/tty) when there is one,
// and to stdout otherwise (seen with -v, or when the package fails).
package integration

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// The services' variables.
const (
	MySQL   = "QUAN_TEST_MYSQL"
	Redis   = "QUAN_TEST_REDIS"
	NATS    = "QUAN_TEST_NATS"
	Browser = "QUAN_TEST_BROWSER"
	// ClientGen runs the client generators (oapi-codegen through the Go
	// module proxy, openapi-typescript and tsc through npx) on the
	// OpenAPI document.
	ClientGen = "QUAN_TEST_CLIENTGEN"
)

// suites names the suite of each variable and gives an example value.
var suites = map[string]struct{ name, example string }{
	MySQL:     {"MySQL", "'root@tcp(127.0.0.1:3306)/test'"},
	Redis:     {"Redis", "redis://127.0.0.1:6379"},
	NATS:      {"NATS", "nats://127.0.0.1:4222"},
	Browser:   {"browser", "/usr/bin/chromium"},
	ClientGen: {"client generation", "1"},
}

// Example is the variable's assignment as a user would type it:
// QUAN_TEST_REDIS=redis://127.0.0.1:6379.
func Example(variable string) string {
	return variable + "=" + suites[variable].example
}

// run is what one test binary (one package) recorded: whether Main runs
// its tests, and the tests skipped for want of each variable. The state
// of a test binary, shared by its tests, as go test runs one binary per
// package.
var run struct {
	sync.Mutex
	main    bool
	skipped map[string]map[string]bool // variable → test names
}

// Need returns the values of vars, variables of the services t needs, in
// order. If any is unset, it records the skip and skips t, saying what to
// set; a set variable whose service does not answer is the caller's to
// fail, never to skip. It fails t if the package's TestMain does not call
// Main, which would let the skips pass unsaid.
func Need(t testing.TB, vars ...string) []string {
	t.Helper()
	run.Lock()
	defer run.Unlock()
	if !run.main {
		t.Fatal("integration.Need: the package's tests do not run through integration.Main: add func TestMain(m *testing.M) { integration.Main(m) }")
	}
	vals := make([]string, len(vars))
	var missing []string
	for i, v := range vars {
		if _, ok := suites[v]; !ok {
			t.Fatalf("integration.Need: %s names no service", v)
		}
		if vals[i] = os.Getenv(v); vals[i] == "" {
			missing = append(missing, v)
		}
	}
	if len(missing) == 0 {
		return vals
	}
	for _, v := range missing {
		if run.skipped[v] == nil {
			run.skipped[v] = map[string]bool{}
		}
		run.skipped[v][t.Name()] = true
	}
	examples := make([]string, len(missing))
	for i, v := range missing {
		examples[i] = Example(v)
	}
	t.Skipf("set %s to run it", strings.Join(examples, " "))
	return nil
}

// Main runs the package's tests and then each of after (to stop what the
// tests started), then, if any test skipped for want of a service's
// variable, writes one line saying which suites skipped and the variables
// that run them. Call it from TestMain.
func Main(m *testing.M, after ...func()) {
	run.Lock()
	run.main, run.skipped = true, map[string]map[string]bool{}
	run.Unlock()
	m.Run()
	for _, f := range after {
		f()
	}
	line := Summary(packageName(), skipped())
	if line == "" {
		return
	}
	w, closeW := output()
	defer closeW()
	fmt.Fprintln(w, line)
}

// skipped returns the tests skipped for want of each variable.
func skipped() map[string][]string {
	run.Lock()
	defer run.Unlock()
	out := map[string][]string{}
	for v, tests := range run.skipped {
		for name := range tests {
			out[v] = append(out[v], name)
		}
	}
	return out
}

// Summary is the line of package pkg whose tests skipped for want of each
// variable: "" if none did, else as
//
//	./mysql: 52 tests skipped (MySQL 48, Redis 4, NATS 4): set QUAN_TEST_MYSQL='root@tcp(127.0.0.1:3306)/test' QUAN_TEST_REDIS=... to run them
func Summary(pkg string, skipped map[string][]string) string {
	var vars []string
	all := map[string]bool{}
	for v, tests := range skipped {
		if len(tests) == 0 {
			continue
		}
		vars = append(vars, v)
		for _, name := range tests {
			all[name] = true
		}
	}
	if len(vars) == 0 {
		return ""
	}
	order := []string{MySQL, Redis, NATS, Browser, ClientGen}
	slices.SortFunc(vars, func(a, b string) int { return slices.Index(order, a) - slices.Index(order, b) })
	counts := make([]string, len(vars))
	examples := make([]string, len(vars))
	for i, v := range vars {
		counts[i] = fmt.Sprintf("%s %d", suites[v].name, len(skipped[v]))
		examples[i] = Example(v)
	}
	plural := "s"
	if len(all) == 1 {
		plural = ""
	}
	return fmt.Sprintf("%s: %d integration test%s skipped (%s): set %s to run them",
		pkg, len(all), plural, strings.Join(counts, ", "), strings.Join(examples, " "))
}

// packageName is the package under test as go test names it from the
// module's root (go test runs a package's tests in its folder): ./mysql.
func packageName() string {
	dir, err := os.Getwd()
	if err != nil {
		return "this package"
	}
	for root := dir; ; {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			rel, err := filepath.Rel(root, dir)
			if err != nil || rel == "." {
				return "."
			}
			return "./" + filepath.ToSlash(rel)
		}
		up := filepath.Dir(root)
		if up == root {
			return dir
		}
		root = up
	}
}

// output is where Main's line goes: stdout with -v, where go test shows
// it; else the terminal, as go test shows a passing package's output
// only with -v; else stdout.
func output() (io.Writer, func()) {
	if !testing.Verbose() {
		if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
			return tty, func() { tty.Close() }
		}
	}
	return os.Stdout, func() {}
}
