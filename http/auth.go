package http

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/apikeys"
)

// MinSecretLen is the shortest HS256 signing secret accepted, in bytes.
const MinSecretLen = 32

const tokenIssuer = "quan"

// Tokens mints and verifies HS256 bearer tokens that carry an Identity.
// It remembers the tokens it verified (see tokenCache), so that a token
// sent again is not parsed again.
type Tokens struct {
	secret []byte
	now    func() time.Time
	cache  *tokenCache // nil remembers nothing
	macs   sync.Pool   // of *macState
	idp    *JWKS       // nil: HS256 tokens only (see UseJWKS)

	// Verified, if set, is called with the kind of each token accepted:
	// "hs256" (minted with the secret) or "jwks" (the identity
	// provider's), so that a switch from one to the other can be watched.
	Verified func(kind string)
}

// NewTokens returns Tokens signing with secret, which must be at least
// MinSecretLen bytes. now may be nil (time.Now).
func NewTokens(secret []byte, now func() time.Time) (*Tokens, error) {
	if len(secret) < MinSecretLen {
		return nil, fmt.Errorf("token secret is %d bytes; it needs at least %d", len(secret), MinSecretLen)
	}
	if now == nil {
		now = time.Now
	}
	return &Tokens{secret: secret, now: now, cache: newTokenCache(tokenCacheSlots)}, nil
}

type jwtClaims struct {
	Role   quan.Role `json:"role"`
	ShopNo int64     `json:"shop,omitempty"`
	UserID int64     `json:"uid,omitempty,string"`
	jwt.RegisteredClaims
}

// Mint returns a token for id that expires after ttl.
func (t *Tokens) Mint(id quan.Identity, ttl time.Duration) (string, error) {
	if err := id.Validate(); err != nil {
		return "", err
	}
	if ttl <= 0 {
		return "", fmt.Errorf("token lifetime must be positive, got %s", ttl)
	}
	now := t.now()
	sub := id.Subject
	if sub == "" {
		sub = id.String()
	}
	c := jwtClaims{
		Role:   id.Role,
		ShopNo: id.ShopNo,
		UserID: id.UserID,
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    tokenIssuer,
			Subject:   sub,
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
		},
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(t.secret)
	if err != nil {
		return "", fmt.Errorf("sign token: %w", err)
	}
	return s, nil
}

// Verify checks a token's signature, algorithm, issuer and expiry and
// returns its identity. Any failure is an EUNAUTHORIZED *quan.Error.
// A token verified before is answered from memory until it expires.
// With a JWKS in use (UseJWKS), a token not signed with HS256 is the
// identity provider's (JWKS.verify), and an HS256 one is refused unless
// the JWKS allows them.
func (t *Tokens) Verify(token string) (quan.Identity, error) {
	if t.idp != nil {
		if id, ok, err := t.idp.verify(token); ok {
			t.verified("jwks", err)
			return id, err
		}
		if !t.idp.AllowsHS256() {
			return quan.Identity{}, quan.Errorf(quan.EUNAUTHORIZED, "HS256 tokens are not accepted: use a token of the identity provider")
		}
	}
	id, err := t.verifyHS256(token)
	t.verified("hs256", err)
	return id, err
}

// UseJWKS makes t accept the tokens of the identity provider whose keys
// j holds, and refuse HS256 ones unless j allows them. Call it before t
// verifies anything.
func (t *Tokens) UseJWKS(j *JWKS) { t.idp = j }

func (t *Tokens) verified(kind string, err error) {
	if err == nil && t.Verified != nil {
		t.Verified(kind)
	}
}

// verifyHS256 is Verify for the tokens of Mint's algorithm and secret.
func (t *Tokens) verifyHS256(token string) (quan.Identity, error) {
	if id, ok, err := t.verifyMinted(token); ok {
		return id, err
	}
	sum := sha256.Sum256([]byte(token))
	if t.cache != nil {
		if id, ok := t.cache.get(&sum, t.now()); ok {
			return id, nil
		}
	}
	var c jwtClaims
	_, err := jwt.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return t.secret, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithIssuer(tokenIssuer),
		jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(t.now),
	)
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return quan.Identity{}, quan.Errorf(quan.EUNAUTHORIZED, "the token has expired")
	case err != nil:
		return quan.Identity{}, quan.Errorf(quan.EUNAUTHORIZED, "the token is invalid")
	}
	if !payloadText(token) {
		return quan.Identity{}, quan.Errorf(quan.EUNAUTHORIZED, "the token is invalid")
	}
	id := quan.Identity{Subject: c.Subject, Role: c.Role, ShopNo: c.ShopNo, UserID: c.UserID}
	if err := id.Validate(); err != nil {
		return quan.Identity{}, err
	}
	if t.cache != nil {
		e := &tokenEntry{sum: sum, id: id, expires: c.ExpiresAt.Time}
		if c.NotBefore != nil {
			e.notBefore = c.NotBefore.Time
		}
		t.cache.put(e)
	}
	return id, nil
}

// payloadText reports whether the claims of a token the library has
// verified hold only text checkText takes, as readClaims requires of the
// tokens of Mint's shape: the library's encoding/json would take bytes
// that are not UTF-8 and half a surrogate pair as U+FFFD.
func payloadText(token string) bool {
	_, rest, _ := strings.Cut(token, ".")
	payload, _, _ := strings.Cut(rest, ".")
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	return err == nil && len(checkText(raw)) == 0
}

// mintedHeader is the first part of every token Mint makes:
// {"alg":"HS256","typ":"JWT"}.
const mintedHeader = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"

// verifyMinted verifies a token shaped as Mint makes them, at a fraction
// of the CPU of the JWT library (its map of the header, its NumericDate
// parsing, its encoding/json, once per claim of a flash sale): the one
// header Mint writes, an HMAC compared with the signature in its one
// canonical encoding, then the claims (see readClaims). ok is false, with
// nothing decided, for a token of another shape (a header with its fields
// in another order, fractional times), which the library verifies. The
// rules are the library's as Verify asks for them: HS256, issuer quan,
// exp required and in the future, nbf if present not in the future.
//
// The cache is looked up by the token's HMAC, once it matches the
// signature: the HMAC names the token as well as a SHA-256 of it would
// (the header is fixed, the signature is its encoding), and it has to be
// computed anyway, so a token seen once pays for no other digest.
func (t *Tokens) verifyMinted(token string) (id quan.Identity, ok bool, err error) {
	head, rest, found := strings.Cut(token, ".")
	if !found || head != mintedHeader {
		return id, false, nil
	}
	payload, sig, found := strings.Cut(rest, ".")
	if !found || strings.IndexByte(sig, '.') >= 0 || len(sig) != macLen {
		return id, true, quan.Errorf(quan.EUNAUTHORIZED, "the token is invalid")
	}
	m := t.getMAC()
	defer t.putMAC(m)
	signed := len(head) + 1 + len(payload)
	m.tok = append(m.tok[:0], token...)
	m.h.Write(m.tok[:signed])
	m.h.Sum(m.sum[:0])
	var want [macLen]byte
	base64.RawURLEncoding.Encode(want[:], m.sum[:])
	if !hmac.Equal(want[:], m.tok[signed+1:]) {
		return id, true, quan.Errorf(quan.EUNAUTHORIZED, "the token is invalid")
	}
	now := t.now()
	if t.cache != nil {
		if id, ok := t.cache.get(&m.sum, now); ok {
			return id, true, nil
		}
	}
	m.raw = slices.Grow(m.raw[:0], base64.RawURLEncoding.DecodedLen(len(payload)))
	n, err := base64.RawURLEncoding.Decode(m.raw[:cap(m.raw)], m.tok[len(head)+1:signed])
	if err != nil {
		return id, true, quan.Errorf(quan.EUNAUTHORIZED, "the token is invalid")
	}
	var c tokenClaims
	switch ok, bad := readClaims(m.raw[:n], &c); {
	case bad:
		return id, true, quan.Errorf(quan.EUNAUTHORIZED, "the token is invalid")
	case !ok:
		return id, false, nil // signed by us but not as Mint writes: the library decides
	}
	switch {
	case c.iss != tokenIssuer || !c.hasExp:
		return id, true, quan.Errorf(quan.EUNAUTHORIZED, "the token is invalid")
	case c.hasNbf && now.Before(time.Unix(c.nbf, 0)):
		return id, true, quan.Errorf(quan.EUNAUTHORIZED, "the token is invalid")
	case !now.Before(time.Unix(c.exp, 0)):
		return id, true, quan.Errorf(quan.EUNAUTHORIZED, "the token has expired")
	}
	id = quan.Identity{Subject: c.sub, Role: c.role, ShopNo: c.shop, UserID: c.uid}
	if err := id.Validate(); err != nil {
		return quan.Identity{}, true, err
	}
	if t.cache != nil {
		e := &tokenEntry{sum: m.sum, id: id, expires: time.Unix(c.exp, 0)}
		if c.hasNbf {
			e.notBefore = time.Unix(c.nbf, 0)
		}
		t.cache.put(e)
	}
	return id, true, nil
}

// macLen is the length of an HS256 signature in base64url:
// base64.RawURLEncoding.EncodedLen(sha256.Size).
const macLen = 43

// macState is an HMAC keyed with the secret and the buffers of one
// verification, kept in Tokens.macs: hmac.New costs some 1 µs and 6
// allocations, and a Reset restores the keyed state with none.
type macState struct {
	h   hash.Hash
	sum [sha256.Size]byte
	tok []byte // the token, as hash.Hash takes []byte
	raw []byte // the decoded claims
}

// maxPooledToken bounds the token a pooled macState keeps a buffer for:
// a token far longer than Mint's 200 bytes does not pin its size.
const maxPooledToken = 1 << 10

func (t *Tokens) getMAC() *macState {
	if m, ok := t.macs.Get().(*macState); ok {
		return m
	}
	return &macState{h: hmac.New(sha256.New, t.secret)}
}

func (t *Tokens) putMAC(m *macState) {
	m.h.Reset()
	if cap(m.tok) > maxPooledToken {
		m.tok, m.raw = nil, nil
	}
	t.macs.Put(m)
}

// tokenCacheSlots is how many verified tokens Tokens remembers. An entry
// is some 160 bytes, so a full cache holds about 10 MB.
const tokenCacheSlots = 1 << 16

// tokenCache remembers verified tokens: a token sent again skips the
// base64, the claims and their checks (a minted token still pays its
// HMAC, which is its key), as each user of a flash sale polls its claim
// with one token again and again. Only tokens that passed the full check
// are put in, so garbage costs what it did and evicts nothing. A token
// seen once costs an entry (some 90 ns and 130 bytes, BenchmarkVerify
// Fresh against Uncached); each time it is seen again saves some 150 ns.
//
// It is direct-mapped: a token's digest picks its one slot, and a newer
// token evicts the one there. So its size is fixed whatever the number of
// distinct tokens, and a lookup is one atomic load with no lock to
// contend on. Entries hold a digest, not the token: the HMAC of a minted
// token, the SHA-256 of any other. A digest match is as good as a token
// match (both resist collisions), takes 32 bytes instead of 200, and
// comparing digests in variable time leaks nothing about a genuine token.
type tokenCache struct {
	slots []atomic.Pointer[tokenEntry]
}

// tokenEntry is a verified token. It never changes once in a slot.
type tokenEntry struct {
	sum       [sha256.Size]byte
	id        quan.Identity
	notBefore time.Time // zero if the token has no nbf
	expires   time.Time
}

// newTokenCache returns a cache of n > 0 slots.
func newTokenCache(n int) *tokenCache {
	return &tokenCache{slots: make([]atomic.Pointer[tokenEntry], n)}
}

func (c *tokenCache) slot(sum *[sha256.Size]byte) *atomic.Pointer[tokenEntry] {
	return &c.slots[binary.LittleEndian.Uint64(sum[:8])%uint64(len(c.slots))]
}

// get returns the identity of the token with digest sum if it is in the
// cache and valid at now, by the rule of jwt's validator: nbf <= now < exp.
// An expired token is not answered: Verify parses it again and says why.
func (c *tokenCache) get(sum *[sha256.Size]byte, now time.Time) (quan.Identity, bool) {
	e := c.slot(sum).Load()
	if e == nil || e.sum != *sum || now.Before(e.notBefore) || !now.Before(e.expires) {
		return quan.Identity{}, false
	}
	return e.id, true
}

// put remembers a verified token, evicting the one in its slot.
func (c *tokenCache) put(e *tokenEntry) { c.slot(&e.sum).Store(e) }

// authenticate puts the bearer token's identity into the request context.
// A request without a token goes on anonymous; handlers that need an
// identity refuse it with 401. A bad token is refused here.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Get("Authorization")
		if h == "" {
			next.ServeHTTP(w, r)
			return
		}
		scheme, token, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
			s.writeError(w, r, quan.Errorf(quan.EUNAUTHORIZED, "the Authorization header must be 'Bearer <token>'"))
			return
		}
		id, err := s.verify(r, strings.TrimSpace(token))
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(quan.NewContextWithIdentity(r.Context(), id)))
	})
}

// verify returns the identity of a bearer token: a service key's by
// Keys, a JWT's by Tokens.
func (s *Server) verify(r *http.Request, token string) (quan.Identity, error) {
	if apikeys.IsKey(token) {
		if s.Keys == nil {
			return quan.Identity{}, quan.Errorf(quan.EUNAUTHORIZED, "this server takes no service keys")
		}
		return s.Keys.Authenticate(r.Context(), token)
	}
	return s.Tokens.Verify(token)
}

// identity returns the caller's identity, or EUNAUTHORIZED if anonymous.
func identity(r *http.Request) (quan.Identity, error) {
	id := quan.IdentityFromContext(r.Context())
	if id.Role == "" {
		return id, quan.Errorf(quan.EUNAUTHORIZED, "this needs a bearer token")
	}
	return id, nil
}
