package quan_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/quanhq/quan"

// The package map (doc.go) as the layout test holds the code to it: what
// each package is, and the arrows between use cases.
var (
	// adapters are one technology each: they import the root and
	// internal/, never a use case or another adapter.
	adapters = []string{"disk", "inmem", "mail", "mysql", "nats", "prom", "redis", "report", "rules", "sheet", "sms", "sqlite", "tracing"}
	// useCases are one use case each: they import the root, internal/
	// and the use cases their arrows name.
	useCases = []string{"accounts", "apikeys", "claims", "codes", "events", "facts", "notify", "reconcile", "shops", "stats", "tasks", "templates", "wallet"}
	// arrows are the use cases a use case may import. None today: a use
	// case needs another through a small interface of its own, wired by
	// cmd/quan.
	arrows = map[string][]string{}
	// fronts serve the use cases to people and programs: they import the
	// root, the use cases, internal/ and each other, never an adapter.
	fronts = []string{"http"}
	// kits are the conformance suites and test rigs: test code, which may
	// import use cases (quantest) or anything but cmd (internal/testrig),
	// and which no package outside a test imports.
	kits = []string{"quantest", "internal/testrig"}
)

// listed is what go list says of a package.
type listed struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// TestLayout holds the module's imports to the package map: the root
// imports only the standard library and internal/; an adapter imports
// the root and internal/, never a use case or another adapter; a use case
// imports other use cases only along an arrow; only cmd/quan wires
// adapters to use cases; no package but a test imports a kit; and the
// binary links neither "testing" nor a kit.
func TestLayout(t *testing.T) {
	pkgs := goList(t, "./...")
	for _, p := range violations(pkgs) {
		t.Error(p)
	}
	bin := goList(t, "./cmd/quan")
	for _, p := range binaryViolations(bin) {
		t.Error(p)
	}
}

// TestLayoutCatches: the rules find each kind of violation in a made-up
// module: an adapter importing a use case or another adapter, the root
// importing a use case or a third-party module, a use case importing
// another without an arrow, a front importing an adapter, a package that
// fits no class, a kit imported outside a test, and a binary linking
// "testing" or a kit.
func TestLayoutCatches(t *testing.T) {
	m := func(p string) string { return module + "/" + p }
	pkgs := []listed{
		{ImportPath: module, Imports: []string{"context", m("claims"), "github.com/redis/rueidis", m("internal/batch")}},
		{ImportPath: m("sqlite"), Imports: []string{module, m("tasks"), m("redis"), m("internal/sqlrow")}},
		{ImportPath: m("claims"), Imports: []string{module, m("shops"), m("internal/flight")}},
		{ImportPath: m("http"), Imports: []string{module, m("claims"), m("sheet")}},
		{ImportPath: m("mystery")},
		{ImportPath: m("wallet"), Imports: []string{module, m("quantest")}},
		{ImportPath: m("cmd/quan"), Imports: []string{module, m("sqlite"), m("claims")}},
	}
	want := []string{
		"github.com/quanhq/quan imports claims",
		"github.com/quanhq/quan imports github.com/redis/rueidis",
		"sqlite imports tasks",
		"sqlite imports redis",
		"claims imports shops",
		"http imports sheet",
		"mystery is in no class",
		"wallet imports quantest",
	}
	got := violations(pkgs)
	for _, w := range want {
		if !slices.ContainsFunc(got, func(g string) bool { return strings.HasPrefix(g, w) }) {
			t.Errorf("no violation %q among %q", w, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d violations, want %d: %q", len(got), len(want), got)
	}
	bin := []listed{{ImportPath: m("cmd/quan"), Deps: []string{"context", "testing", m("quantest"), m("sqlite")}}}
	if got := binaryViolations(bin); len(got) != 2 {
		t.Errorf("binary violations %q, want testing and quantest", got)
	}
}

// violations returns what breaks the package map among pkgs, a line
// each.
func violations(pkgs []listed) []string {
	var out []string
	for _, p := range pkgs {
		class, name := classify(p.ImportPath)
		for _, imp := range p.Imports {
			if why := forbidden(class, name, imp); why != "" {
				out = append(out, short(p.ImportPath)+" imports "+short(imp)+": "+why)
			}
		}
		if class == "" {
			out = append(out, short(p.ImportPath)+" is in no class of the package map: add it to layout_test.go and doc.go")
		}
	}
	return out
}

// binaryViolations returns what the binary links that it must not.
func binaryViolations(pkgs []listed) []string {
	var out []string
	for _, p := range pkgs {
		for _, d := range p.Deps {
			c, _ := classify(d)
			if d == "testing" || c == "kit" {
				out = append(out, short(p.ImportPath)+" links "+short(d)+": test code stays out of the binary")
			}
		}
	}
	return out
}

// classify returns the class of the module's package path and its name
// within the class (the adapter's, use case's, front's or kit's top
// folder); "" for a package outside the module or in no class.
func classify(path string) (class, name string) {
	if path == module {
		return "root", ""
	}
	rel, ok := strings.CutPrefix(path, module+"/")
	if !ok {
		return "", ""
	}
	for _, k := range kits {
		if rel == k || strings.HasPrefix(rel, k+"/") {
			return "kit", k
		}
	}
	top, _, _ := strings.Cut(rel, "/")
	switch {
	case top == "cmd":
		return "cmd", top
	case top == "internal":
		return "internal", rel
	case slices.Contains(adapters, top):
		return "adapter", top
	case slices.Contains(useCases, top):
		return "usecase", top
	case slices.Contains(fronts, top):
		return "front", top
	}
	return "", ""
}

// forbidden says why a package of class and name may not import imp, ""
// if it may.
func forbidden(class, name, imp string) string {
	if class == "" || class == "cmd" {
		return ""
	}
	ic, iname := classify(imp)
	inModule := imp == module || strings.HasPrefix(imp, module+"/")
	switch {
	case ic == "kit" && class != "kit":
		return "a kit is for tests only"
	case class == "root":
		if inModule && ic != "internal" || !inModule && strings.Contains(strings.Split(imp, "/")[0], ".") {
			return "the root imports only the standard library and internal/"
		}
	case class == "internal":
		if ic == "usecase" || ic == "adapter" || ic == "front" || ic == "cmd" {
			return "internal/ holds helpers below the use cases and adapters"
		}
	case class == "adapter":
		if ic == "usecase" || ic == "front" || ic == "cmd" || ic == "adapter" && iname != name {
			return "an adapter imports the root and internal/ only"
		}
	case class == "usecase":
		if ic == "usecase" && iname != name && !slices.Contains(arrows[name], iname) {
			return "no arrow of the package map runs from " + name + " to " + iname
		}
		if ic == "adapter" || ic == "front" || ic == "cmd" {
			return "a use case depends on ports, which cmd/quan wires to adapters"
		}
	case class == "front":
		if ic == "adapter" || ic == "cmd" {
			return "a front reaches adapters only through the use cases cmd/quan wires"
		}
	case class == "kit":
		if ic == "cmd" {
			return "a kit does not reach the binary's wiring"
		}
		if name == "quantest" && (ic == "adapter" || ic == "front") {
			return "a conformance suite runs on the adapter it is given"
		}
	}
	return ""
}

// short is path within the module.
func short(path string) string {
	if rel, ok := strings.CutPrefix(path, module+"/"); ok {
		return rel
	}
	return path
}

// goList runs go list -json with args at the module's root.
func goList(t *testing.T, args ...string) []listed {
	t.Helper()
	goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := exec.LookPath(goCmd); err != nil {
		goCmd = "go"
	}
	cmd := exec.Command(goCmd, append([]string{"list", "-json"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var pkgs []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatalf("go list %s listed nothing", strings.Join(args, " "))
	}
	return pkgs
}
