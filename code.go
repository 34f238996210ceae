package quan

import (
	"crypto/rand"
	"fmt"
	"strings"
)

// CodeAlphabet holds the symbols of coupon codes: digits and capitals
// without the ones people misread or mistype (0 O, 1 I L, and U, which
// reads as V).
const CodeAlphabet = "23456789ABCDEFGHJKMNPQRSTVWXYZ"

// Code lengths: a code is its prefix, 15 symbols (room for 73 bits: a
// redeem code's are random, a coupon's hold its 64-bit id, see CodeKey)
// and one check symbol.
const (
	CodeLength        = 16 // without a prefix: 15 symbols and the check
	MaxCodePrefix     = 2  // a prefix replaces none of the random symbols
	codeRandomSymbols = CodeLength - 1
)

// codeIndex maps a byte to its place in CodeAlphabet, -1 if none.
var codeIndex = func() [256]int8 {
	var idx [256]int8
	for i := range idx {
		idx[i] = -1
	}
	for i := range len(CodeAlphabet) {
		idx[CodeAlphabet[i]] = int8(i)
	}
	return idx
}()

// NewCode returns a fresh random code, as redeem codes are: prefix (0 to
// MaxCodePrefix symbols of CodeAlphabet, marking a template's codes), 15
// symbols from crypto/rand and a check symbol, 16 to 18 symbols in all.
// A coupon's own code is made from its id instead (CodeKey.Code).
func NewCode(prefix string) (string, error) {
	if len(prefix) > MaxCodePrefix {
		return "", Errorf(EINVALID, "code prefix %q: at most %d symbols", prefix, MaxCodePrefix)
	}
	for i := range len(prefix) {
		if codeIndex[prefix[i]] < 0 {
			return "", Errorf(EINVALID, "code prefix %q: %q is not one of %s", prefix, prefix[i], CodeAlphabet)
		}
	}
	b := make([]byte, len(prefix)+codeRandomSymbols+1)
	copy(b, prefix)
	body := b[len(prefix) : len(b)-1]
	// Rejection sampling keeps every symbol equally likely: 240 is the
	// largest multiple of 30 that fits a byte.
	var buf [32]byte
	for n := 0; n < len(body); {
		if _, err := rand.Read(buf[:]); err != nil {
			return "", fmt.Errorf("new code: %w", err)
		}
		for _, r := range buf {
			if r < 240 && n < len(body) {
				body[n] = CodeAlphabet[int(r)%len(CodeAlphabet)]
				n++
			}
		}
	}
	b[len(b)-1] = CodeAlphabet[checkSymbol(b[:len(b)-1])]
	return string(b), nil
}

// NewCodes returns n fresh codes with prefix, as NewCode does.
func NewCodes(n int, prefix string) ([]string, error) {
	codes := make([]string, n)
	for i := range codes {
		c, err := NewCode(prefix)
		if err != nil {
			return nil, err
		}
		codes[i] = c
	}
	return codes, nil
}

// checkSymbol computes the Luhn mod N check of s, whose bytes are all in
// CodeAlphabet: it catches every single mistyped symbol and every swap of
// two neighbours but the swap of the symbols worth 0 and N-1 ("2" and "Z").
func checkSymbol(s []byte) int {
	n := len(CodeAlphabet)
	factor, sum := 2, 0
	for i := len(s) - 1; i >= 0; i-- {
		v := int(codeIndex[s[i]]) * factor
		sum += v/n + v%n
		factor = 3 - factor
	}
	return (n - sum%n) % n
}

// ParseCode normalises a code as a person may type it (lower case,
// spaces and dashes between groups) and checks its symbols and check
// symbol, so a mistyped code is refused before anything is looked up.
func ParseCode(s string) (string, error) {
	var b strings.Builder
	for i := range len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '-':
			continue
		case 'a' <= c && c <= 'z':
			c -= 'a' - 'A'
		}
		b.WriteByte(c)
	}
	code := b.String()
	if len(code) < CodeLength || len(code) > CodeLength+MaxCodePrefix {
		return "", codeErr(s, fmt.Sprintf("want %d to %d symbols, got %d", CodeLength, CodeLength+MaxCodePrefix, len(code)))
	}
	for i := range len(code) {
		if codeIndex[code[i]] < 0 {
			return "", codeErr(s, fmt.Sprintf("%q is not a code symbol", code[i]))
		}
	}
	if CodeAlphabet[checkSymbol([]byte(code[:len(code)-1]))] != code[len(code)-1] {
		return "", codeErr(s, "the check symbol does not match: a symbol is mistyped")
	}
	return code, nil
}

// codeErr is ParseCode's refusal of s: EINVALID naming the field "code".
func codeErr(s, why string) error {
	msg := fmt.Sprintf("code %q: %s", s, why)
	return &Error{Code: EINVALID, Message: msg, Fields: []FieldError{{Field: "code", Message: msg}}}
}
