package mysql

import "testing"

// TestAppendLoadText: what LOAD DATA would read as a tab, a newline or an
// escape is escaped; the rest goes as it is.
func TestAppendLoadText(t *testing.T) {
	for in, want := range map[string]string{
		"c7-42-abcdefghijklmnop": "c7-42-abcdefghijklmnop",
		"a\tb\nc\\d":             `a\tb\nc\\d`,
		`\N`:                     `\\N`,
		"券":                      "券",
	} {
		if got := string(appendLoadText([]byte("x"), in)); got != "x"+want {
			t.Errorf("appendLoadText(%q) = %q, want %q", in, got, "x"+want)
		}
	}
}
