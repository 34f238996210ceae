package quan

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClipRaw(t *testing.T) {
	for _, s := range []string{"", "123", strings.Repeat("9", MaxRawBytes), strings.Repeat("x", MaxRawBytes+1),
		strings.Repeat("券", 100), "a" + strings.Repeat("券", 100), strings.Repeat("x", 128<<10)} {
		got := ClipRaw(s)
		switch {
		case len(s) <= MaxRawBytes && got != s:
			t.Errorf("clipRaw(%q) = %q, want it unchanged", s, got)
		case len(got) > MaxRawBytes || !utf8.ValidString(got):
			t.Errorf("clipRaw(%d bytes) = %q: %d bytes, valid UTF-8 %v", len(s), got, len(got), utf8.ValidString(got))
		case len(s) > MaxRawBytes && (!strings.HasSuffix(got, "…") || !strings.HasPrefix(s, strings.TrimSuffix(got, "…"))):
			t.Errorf("clipRaw(%d bytes) = %q, want a prefix marked with …", len(s), got)
		}
	}
}
