package console

import (
	"io/fs"
	"regexp"
	"testing"
)

// TestTemplatesUseKnownMessages checks that every message key a page
// names literally ({{.T "key"}}) has a message.
func TestTemplatesUseKnownMessages(t *testing.T) {
	use := regexp.MustCompile(`\.T "([a-zA-Z0-9_.]+)"`)
	files, err := fs.Glob(assets, "templates/*.html")
	if err != nil || len(files) == 0 {
		t.Fatal(files, err)
	}
	for _, f := range files {
		b, err := fs.ReadFile(assets, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range use.FindAllSubmatch(b, -1) {
			if _, ok := messages[string(m[1])]; !ok {
				t.Errorf("%s uses message %q, which has none", f, m[1])
			}
		}
	}
}

func TestParseYuan(t *testing.T) {
	for in, want := range map[string]int64{"": 0, "0": 0, "12": 1200, "12.5": 1250, "12.50": 1250, "0.01": 1, " 3.07 ": 307, "1000000": 100_000_000} {
		if got, err := parseYuan(in); err != nil || got != want {
			t.Errorf("parseYuan(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"1.234", "-1", "abc", ".5", "1.", "1,5", "1000001", "1e3", "0x10"} {
		if got, err := parseYuan(in); err == nil {
			t.Errorf("parseYuan(%q) = %d, want an error", in, got)
		}
	}
	for fen, want := range map[int64]string{0: "0.00", 1: "0.01", 1250: "12.50", -305: "-3.05"} {
		if got := yuan(fen); got != want {
			t.Errorf("yuan(%d) = %q, want %q", fen, got, want)
		}
	}
}

func TestMessagesBothLanguages(t *testing.T) {
	for key, m := range messages {
		if m.zh == "" || m.en == "" {
			t.Errorf("message %q: zh %q en %q", key, m.zh, m.en)
		}
	}
}
