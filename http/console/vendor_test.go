package console

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestVendoredUPlot checks that the vendored uPlot is what
// static/vendor/update-uplot.sh fetched: every file the console serves
// has the sha256 that VERSION gives, none is missing or unlisted, and
// the MIT licence that lets us ship it is there.
func TestVendoredUPlot(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("static", "vendor", "uplot")
	f, err := os.Open(filepath.Join(dir, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	sum := regexp.MustCompile(`^([0-9a-f]{64})  (\S+)$`)
	want := map[string]string{} // file name → sha256
	meta := map[string]string{}
	lines := bufio.NewScanner(f)
	for n := 1; lines.Scan(); n++ {
		line := lines.Text()
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case sum.MatchString(line):
			m := sum.FindStringSubmatch(line)
			want[m[2]] = m[1]
		default:
			k, v, ok := strings.Cut(line, " ")
			if !ok {
				t.Fatalf("VERSION:%d: %q is neither a checksum nor a key and value", n, line)
			}
			meta[k] = v
		}
	}
	if err := lines.Err(); err != nil {
		t.Fatal(err)
	}
	if meta["version"] == "" {
		t.Error("VERSION has no version line")
	}
	if meta["license"] != "MIT" {
		t.Errorf("VERSION: license %q, want MIT", meta["license"])
	}
	for _, name := range []string{"uPlot.iife.min.js", "uPlot.min.css", "LICENSE"} {
		if _, ok := want[name]; !ok {
			t.Errorf("VERSION has no sha256 for %s", name)
		}
	}

	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "VERSION" && want[e.Name()] == "" {
			t.Errorf("%s is in %s but not in VERSION: vendor it with update-uplot.sh", e.Name(), dir)
		}
	}
	for name, sha := range want {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Error(err)
			continue
		}
		if got := sha256.Sum256(b); hex.EncodeToString(got[:]) != sha {
			t.Errorf("%s: sha256 %x, VERSION says %s: the file changed by hand, or VERSION is stale", name, got, sha)
		}
	}

	licence, err := os.ReadFile(filepath.Join(dir, "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"MIT License", "Leon Sorokin", "Permission is hereby granted"} {
		if !strings.Contains(string(licence), s) {
			t.Errorf("LICENSE lacks %q", s)
		}
	}
}
