package quan

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func testCodeKey(t testing.TB, secret string) *CodeKey {
	t.Helper()
	k, err := NewCodeKey([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestNewCodeKeyWantsSixteenBytes(t *testing.T) {
	for _, n := range []int{0, 15, 17, 32} {
		if _, err := NewCodeKey(make([]byte, n)); err == nil {
			t.Errorf("NewCodeKey of %d bytes: no error", n)
		}
	}
	a, b := NewCodeSecret(), NewCodeSecret()
	if len(a) != CodeKeySize || bytes.Equal(a, b) {
		t.Errorf("NewCodeSecret: %x then %x, want %d fresh bytes each", a, b, CodeKeySize)
	}
}

// TestCodeKeyGolden pins the codes of a known secret: a change of the
// permutation or of the encoding would change every code issued. The
// first was worked out apart from this code, with another AES.
func TestCodeKeyGolden(t *testing.T) {
	k := testCodeKey(t, "0123456789abcdef")
	for _, tc := range []struct {
		id     int64
		prefix string
		want   string
	}{
		{1, "", "22DQYHJM7X9TVM7C"},
		{1, "Q", "Q22DQYHJM7X9TVM7N"}, // the same 15 symbols, another check
		{math.MaxInt64, "A7", "A7226WKWTF9PSYQHDS"},
	} {
		if got := k.Code(tc.id, tc.prefix); got != tc.want {
			t.Errorf("Code(%d, %q) = %q, want %q", tc.id, tc.prefix, got, tc.want)
		}
	}
}

func TestCodeKeyRoundTrip(t *testing.T) {
	k := testCodeKey(t, "0123456789abcdef")
	r := rand.New(rand.NewPCG(1, 2))
	ids := []int64{1, 2, 3, 29, 30, 31, 1 << 32, math.MaxInt64}
	for range 20_000 {
		ids = append(ids, r.Int64N(math.MaxInt64)+1)
	}
	for id := range int64(20_000) {
		ids = append(ids, id+1)
	}
	for _, prefix := range []string{"", "Q", "A7"} {
		for _, id := range ids {
			c := k.Code(id, prefix)
			if len(c) != len(prefix)+CodeLength || !strings.HasPrefix(c, prefix) {
				t.Fatalf("Code(%d, %q) = %q: want the prefix and %d symbols", id, prefix, c, CodeLength)
			}
			if got, err := ParseCode(c); err != nil || got != c {
				t.Fatalf("ParseCode(Code(%d, %q) = %q) = %q, %v", id, prefix, c, got, err)
			}
			got, err := k.CouponID(c, prefix)
			if err != nil || got != id {
				t.Fatalf("CouponID(%q, %q) = %d, %v; want %d", c, prefix, got, err, id)
			}
		}
	}
	// As a person may type it.
	c := k.Code(12345, "Q")
	typed := strings.ToLower(c[:5] + " " + c[5:10] + "-" + c[10:])
	if got, err := k.CouponID(typed, "Q"); err != nil || got != 12345 {
		t.Errorf("CouponID(%q) = %d, %v; want 12345", typed, got, err)
	}
}

// TestCodeKeyDistinct: distinct ids have distinct codes, and another
// secret gives other codes.
func TestCodeKeyDistinct(t *testing.T) {
	k := testCodeKey(t, "0123456789abcdef")
	other := testCodeKey(t, "fedcba9876543210")
	seen := make(map[string]int64, 200_000)
	for id := range int64(200_000) {
		id++
		c := k.Code(id, "")
		if was, ok := seen[c]; ok {
			t.Fatalf("ids %d and %d have the same code %s", was, id, c)
		}
		seen[c] = id
		if id <= 1000 && other.Code(id, "") == c {
			t.Errorf("id %d has code %s under both secrets", id, c)
		}
	}
}

// TestCodeKeyLooksRandom: the codes of consecutive ids do not count
// along. Each symbol from the fourth on is about equally likely. (A value
// below 2^64 written in 15 base-30 digits starts with a 0 digit, "2", and
// a 0 or 1, "2" or "3"; the third digit favours 0 to 4.)
func TestCodeKeyLooksRandom(t *testing.T) {
	k := testCodeKey(t, "0123456789abcdef")
	const codes = 30_000
	counts := make([]map[byte]int, CodeLength-1)
	for i := range counts {
		counts[i] = map[byte]int{}
	}
	for id := range int64(codes) {
		c := k.Code(id+1, "")
		for i := range CodeLength - 1 {
			counts[i][c[i]]++
		}
	}
	if len(counts[0]) != 1 || counts[0]['2'] != codes {
		t.Errorf("first symbols %v, want always 2", counts[0])
	}
	want := codes / len(CodeAlphabet) // 1,000
	for pos := 3; pos < CodeLength-1; pos++ {
		for i := range len(CodeAlphabet) {
			if n := counts[pos][CodeAlphabet[i]]; n < want*8/10 || n > want*12/10 {
				t.Errorf("symbol %q came %d times at %d, want about %d", CodeAlphabet[i], n, pos, want)
			}
		}
	}
}

// TestCodeKeyMistypedSymbol: every single mistyped symbol of a code is
// refused as invalid by its check symbol, before any id is read.
func TestCodeKeyMistypedSymbol(t *testing.T) {
	k := testCodeKey(t, "0123456789abcdef")
	for _, id := range []int64{1, 777, math.MaxInt64} {
		c := k.Code(id, "Q")
		for i := range len(c) {
			for j := range len(CodeAlphabet) {
				if CodeAlphabet[j] == c[i] {
					continue
				}
				typo := c[:i] + string(CodeAlphabet[j]) + c[i+1:]
				_, err := k.CouponID(typo, "Q")
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "check symbol") {
					t.Fatalf("%q as %q: %v, want invalid, naming the check symbol", c, typo, err)
				}
			}
		}
	}
	for _, bad := range []string{"", "Q23", "Q2222222222222220" /* 0 is no symbol */} {
		if _, err := k.CouponID(bad, "Q"); !errors.Is(err, ErrInvalid) {
			t.Errorf("CouponID(%q): %v, want invalid", bad, err)
		}
	}
}

// withCheck appends the check symbol to body.
func withCheck(body string) string {
	return body + string(CodeAlphabet[checkSymbol([]byte(body))])
}

// TestCodeKeyMadeUpCode: a well-formed code nobody was given decodes to
// no id, or to an id that is almost surely no coupon's; a code of
// another prefix is none of the prefix's.
func TestCodeKeyMadeUpCode(t *testing.T) {
	k := testCodeKey(t, "0123456789abcdef")
	const issued = 1_000_000 // ids 1 … issued stand for the coupons
	r := rand.New(rand.NewPCG(3, 4))
	decoded := 0
	for range 20_000 {
		// Made up as codes look: "2", then "2" or "3", then 13 symbols.
		b := []byte{'Q', '2', "23"[r.IntN(2)]}
		for range CodeLength - 3 {
			b = append(b, CodeAlphabet[r.IntN(len(CodeAlphabet))])
		}
		code := withCheck(string(b))
		id, err := k.CouponID(code, "Q")
		switch {
		case errors.Is(err, ErrNotFound):
		case err != nil:
			t.Fatalf("CouponID(%q): %v, want an id or ErrNotFound", code, err)
		case id >= 1 && id <= issued:
			t.Fatalf("made-up code %q decodes to issued id %d", code, id)
		default:
			decoded++
		}
	}
	if decoded == 0 {
		t.Error("no made-up code decoded to an id: the test tests nothing")
	}
	for _, tc := range []struct{ code, prefix string }{
		{withCheck(strings.Repeat("Z", 15)), ""},       // 30^15-1 ≥ 2^64
		{withCheck("2" + strings.Repeat("Z", 14)), ""}, // 30^14-1 ≥ 2^64
		{k.Code(5, "Q"), ""},                           // the code of another prefix
		{k.Code(5, "Q"), "R"},
		{k.Code(5, ""), "Q"},
		{k.Code(-5, ""), ""}, // no id below 1 has a code
		{k.Code(0, "Q"), "Q"},
	} {
		if id, err := k.CouponID(tc.code, tc.prefix); !errors.Is(err, ErrNotFound) {
			t.Errorf("CouponID(%q, %q) = %d, %v; want ErrNotFound", tc.code, tc.prefix, id, err)
		}
	}
}

func BenchmarkCodeKeyCode(b *testing.B) {
	k := testCodeKey(b, "0123456789abcdef")
	var id int64
	for b.Loop() {
		id++
		_ = k.Code(id, "Q")
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/code")
}

func BenchmarkCodeKeyCouponID(b *testing.B) {
	k := testCodeKey(b, "0123456789abcdef")
	codes := make([]string, 1024)
	for i := range codes {
		codes[i] = k.Code(int64(i+1), "Q")
	}
	i := 0
	for b.Loop() {
		if _, err := k.CouponID(codes[i%len(codes)], "Q"); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/code")
}
