package quan

import (
	"errors"
	"strings"
	"testing"
)

func TestNewCode(t *testing.T) {
	seen := map[string]bool{}
	for _, prefix := range []string{"", "Q", "A7"} {
		for range 2000 {
			c, err := NewCode(prefix)
			if err != nil {
				t.Fatal(err)
			}
			if len(c) != CodeLength+len(prefix) || !strings.HasPrefix(c, prefix) || seen[c] {
				t.Fatalf("NewCode(%q) = %q: want %d symbols, the prefix, and a code not seen before", prefix, c, CodeLength+len(prefix))
			}
			seen[c] = true
			if got, err := ParseCode(c); err != nil || got != c {
				t.Fatalf("ParseCode(%q) = %q, %v", c, got, err)
			}
		}
	}
	for _, bad := range []string{"ABC", "0", "I"} {
		if _, err := NewCode(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("NewCode(%q): %v, want invalid", bad, err)
		}
	}
}

// TestCodeSymbolsEquallyLikely: every symbol of the alphabet turns up in
// the random part about as often as every other.
func TestCodeSymbolsEquallyLikely(t *testing.T) {
	counts := map[byte]int{}
	const codes = 20_000
	for range codes {
		c, err := NewCode("")
		if err != nil {
			t.Fatal(err)
		}
		for i := range codeRandomSymbols {
			counts[c[i]]++
		}
	}
	want := codes * codeRandomSymbols / len(CodeAlphabet) // 10,000
	for i := range len(CodeAlphabet) {
		if n := counts[CodeAlphabet[i]]; n < want*9/10 || n > want*11/10 {
			t.Errorf("symbol %q came %d times, want about %d", CodeAlphabet[i], n, want)
		}
	}
}

// TestParseCodeCatchesTypos checks every single mistyped symbol and every
// swap of neighbours of a few codes.
func TestParseCodeCatchesTypos(t *testing.T) {
	for range 50 {
		c, err := NewCode("Q")
		if err != nil {
			t.Fatal(err)
		}
		for i := range len(c) {
			for j := range len(CodeAlphabet) {
				if CodeAlphabet[j] == c[i] {
					continue
				}
				typo := c[:i] + string(CodeAlphabet[j]) + c[i+1:]
				if _, err := ParseCode(typo); !errors.Is(err, ErrInvalid) {
					t.Fatalf("%q with symbol %d mistyped as %q passed: %v", c, i, CodeAlphabet[j], err)
				}
			}
			if i+1 < len(c) && c[i] != c[i+1] {
				swapped := c[:i] + string(c[i+1]) + string(c[i]) + c[i+2:]
				pair := string(c[i]) + string(c[i+1])
				_, err := ParseCode(swapped)
				if pair == "2Z" || pair == "Z2" { // Luhn mod N misses the swap of 0 and N-1
					continue
				}
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("%q with %q swapped passed", c, pair)
				}
			}
		}
	}
	for _, c := range []struct{ in, want string }{
		{"", "want 16 to 18 symbols"},
		{"ABCD-EFGH", "want 16 to 18 symbols"},
		{"ABCD EFGH JKMN PQR0", `'0' is not a code symbol`},
	} {
		if _, err := ParseCode(c.in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseCode(%q): %v, want %q", c.in, err, c.want)
		}
	}
	c, _ := NewCode("")
	spaced := strings.ToLower(c[:4] + " " + c[4:8] + "-" + c[8:12] + " " + c[12:])
	if got, err := ParseCode(spaced); err != nil || got != c {
		t.Errorf("ParseCode(%q) = %q, %v; want %q", spaced, got, err, c)
	}
}
