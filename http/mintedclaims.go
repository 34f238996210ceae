package http

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/quanhq/quan"
)

// mintedClaims are the claims of a token Mint makes, as they are encoded.
// encoding/json reads them into this when parseMinted cannot.
type mintedClaims struct {
	Role      quan.Role `json:"role"`
	ShopNo    int64     `json:"shop"`
	UserID    int64     `json:"uid,string"`
	Issuer    string    `json:"iss"`
	Subject   string    `json:"sub"`
	ExpiresAt *int64    `json:"exp"`
	NotBefore *int64    `json:"nbf"`
}

// tokenClaims are the claims verifyMinted decides on, however read.
type tokenClaims struct {
	role           quan.Role
	shop, uid      int64
	iss, sub       string
	exp, nbf       int64
	hasExp, hasNbf bool
}

// readClaims reads a minted token's claims: by parseMinted if they are
// shaped as Mint writes them, else by encoding/json. ok is false if
// encoding/json refuses them too. bad is true for claims with text no
// request body may hold (checkText: bytes that are not UTF-8, half a
// surrogate pair, a control character), which encoding/json would take,
// the first two as U+FFFD: parseMinted never takes them, so the claims
// are as strict on either path, and the fast one pays nothing for it.
func readClaims(raw []byte, c *tokenClaims) (ok, bad bool) {
	if parseMinted(raw, c) {
		return true, false
	}
	if len(checkText(raw)) > 0 {
		return false, true
	}
	var m mintedClaims
	if json.Unmarshal(raw, &m) != nil {
		return false, false
	}
	*c = tokenClaims{role: m.Role, shop: m.ShopNo, uid: m.UserID, iss: m.Issuer, sub: m.Subject}
	if m.ExpiresAt != nil {
		c.exp, c.hasExp = *m.ExpiresAt, true
	}
	if m.NotBefore != nil {
		c.nbf, c.hasNbf = *m.NotBefore, true
	}
	return true, false
}

// parseMinted reads claims written byte for byte as Mint writes them
// (json.Marshal of claims: no space, the fields in their order, integer
// times, uid a quoted integer), at a tenth of encoding/json's CPU and
// allocations: some 2.9 µs a claim in a flash sale, where each request
// brings a token never seen. It returns false, with c undefined, for
// anything else: escaped strings, fields in another order or another
// case, repeated fields, numbers with a fraction, an exponent or 19
// digits, spaces. Those go to encoding/json as before, so parseMinted
// only has to agree with it on what it accepts (FuzzParseMinted checks
// that), never to know its rules for the rest.
func parseMinted(b []byte, c *tokenClaims) bool {
	p := claimsParser{b: b}
	*c = tokenClaims{}
	role, ok := p.str(`{"role":"`)
	if !ok {
		return false
	}
	c.role = internRole(role)
	if p.key(`,"shop":`) {
		if c.shop, ok = p.int(); !ok {
			return false
		}
	}
	if p.key(`,"uid":"`) {
		if c.uid, ok = p.int(); !ok || !p.key(`"`) {
			return false
		}
	}
	iss, ok := p.str(`,"iss":"`)
	if !ok {
		return false
	}
	if string(iss) == tokenIssuer {
		c.iss = tokenIssuer
	} else {
		c.iss = string(iss)
	}
	sub, ok := p.str(`,"sub":"`)
	if !ok || !p.key(`,"exp":`) {
		return false
	}
	c.sub = string(sub)
	if c.exp, ok = p.int(); !ok {
		return false
	}
	c.hasExp = true
	if p.key(`,"nbf":`) {
		if c.nbf, ok = p.int(); !ok {
			return false
		}
		c.hasNbf = true
	}
	if p.key(`,"iat":`) { // read by nobody, but it must be a number
		if _, ok = p.int(); !ok {
			return false
		}
	}
	return p.key(`}`) && p.i == len(b)
}

// internRole returns the constant for a known role, sparing a string.
func internRole(b []byte) quan.Role {
	for _, r := range []quan.Role{quan.RoleUser, quan.RoleMerchant, quan.RoleAdmin} {
		if string(b) == string(r) {
			return r
		}
	}
	return quan.Role(b)
}

// claimsParser walks a payload for parseMinted.
type claimsParser struct {
	b []byte
	i int
}

// key consumes k if the input goes on with it.
func (p *claimsParser) key(k string) bool {
	if !bytes.HasPrefix(p.b[p.i:], []byte(k)) {
		return false
	}
	p.i += len(k)
	return true
}

// str consumes k, which ends with a string's opening quote, and the
// string up to its closing one. It refuses a string with an escape or a
// control character, and one that is not UTF-8 (encoding/json would
// replace its bad bytes): what is left reads the same to encoding/json.
func (p *claimsParser) str(k string) ([]byte, bool) {
	if !p.key(k) {
		return nil, false
	}
	rest := p.b[p.i:]
	for j, c := range rest {
		switch {
		case c == '"':
			p.i += j + 1
			return rest[:j], utf8.Valid(rest[:j])
		case c < ' ' || c == '\\':
			return nil, false
		}
	}
	return nil, false
}

// int consumes a JSON integer -?(0|[1-9][0-9]*) of at most 18 digits,
// which cannot overflow an int64. The caller then requires a ',', '}' or
// '"', so that 1.5 or 1e3 is refused, not read as 1.
func (p *claimsParser) int() (int64, bool) {
	j := p.i
	neg := j < len(p.b) && p.b[j] == '-'
	if neg {
		j++
	}
	start := j
	var n int64
	for ; j < len(p.b) && '0' <= p.b[j] && p.b[j] <= '9'; j++ {
		n = n*10 + int64(p.b[j]-'0')
	}
	digits := j - start
	if digits == 0 || digits > 18 || (digits > 1 && p.b[start] == '0') {
		return 0, false
	}
	p.i = j
	if neg {
		n = -n
	}
	return n, true
}
