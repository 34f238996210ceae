package http

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/quanhq/quan"
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

type claims struct {
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
	c := claims{
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
func (t *Tokens) Verify(token string) (quan.Identity, error) {
	sum := sha256.Sum256([]byte(token))
	if t.cache != nil {
		if id, ok := t.cache.get(&sum, t.now()); ok {
			return id, nil
		}
	}
	if id, exp, nbf, ok, err := t.verifyMinted(token); ok {
		if err != nil {
			return quan.Identity{}, err
		}
		if t.cache != nil {
			t.cache.put(&tokenEntry{sum: sum, id: id, expires: exp, notBefore: nbf})
		}
		return id, nil
	}
	var c claims
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

// mintedHeader is the first part of every token Mint makes:
// {"alg":"HS256","typ":"JWT"}.
const mintedHeader = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"

// mintedClaims are the claims of a token Mint makes, as they are encoded.
type mintedClaims struct {
	Role      quan.Role `json:"role"`
	ShopNo    int64     `json:"shop"`
	UserID    int64     `json:"uid,string"`
	Issuer    string    `json:"iss"`
	Subject   string    `json:"sub"`
	ExpiresAt *int64    `json:"exp"`
	NotBefore *int64    `json:"nbf"`
}

// verifyMinted verifies a token shaped as Mint makes them, at a third of
// the CPU of the JWT library (some 3 µs against 9: its map of the header
// and its NumericDate parsing, once per claim of a flash sale): the one
// header Mint writes, an HMAC compared with the signature in its one
// canonical encoding, then the claims. ok is false, with nothing decided,
// for a token of another shape (a header with its fields in another
// order, fractional times), which the library verifies. The rules are the
// library's as Verify asks for them: HS256, issuer quan, exp required and
// in the future, nbf if present not in the future.
func (t *Tokens) verifyMinted(token string) (id quan.Identity, exp, nbf time.Time, ok bool, err error) {
	head, rest, found := strings.Cut(token, ".")
	if !found || head != mintedHeader {
		return id, exp, nbf, false, nil
	}
	payload, sig, found := strings.Cut(rest, ".")
	if !found || strings.IndexByte(sig, '.') >= 0 {
		return id, exp, nbf, true, quan.Errorf(quan.EUNAUTHORIZED, "the token is invalid")
	}
	mac := hmac.New(sha256.New, t.secret)
	mac.Write([]byte(token[:len(head)+1+len(payload)]))
	var sum [sha256.Size]byte
	var want [43]byte // base64.RawURLEncoding.EncodedLen(sha256.Size)
	base64.RawURLEncoding.Encode(want[:], mac.Sum(sum[:0]))
	if !hmac.Equal(want[:], []byte(sig)) {
		return id, exp, nbf, true, quan.Errorf(quan.EUNAUTHORIZED, "the token is invalid")
	}
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return id, exp, nbf, true, quan.Errorf(quan.EUNAUTHORIZED, "the token is invalid")
	}
	var c mintedClaims
	if json.Unmarshal(raw, &c) != nil {
		return id, exp, nbf, false, nil // signed by us but not as Mint writes: the library decides
	}
	now := t.now()
	switch {
	case c.Issuer != tokenIssuer || c.ExpiresAt == nil:
		return id, exp, nbf, true, quan.Errorf(quan.EUNAUTHORIZED, "the token is invalid")
	case c.NotBefore != nil && now.Before(time.Unix(*c.NotBefore, 0)):
		return id, exp, nbf, true, quan.Errorf(quan.EUNAUTHORIZED, "the token is invalid")
	case !now.Before(time.Unix(*c.ExpiresAt, 0)):
		return id, exp, nbf, true, quan.Errorf(quan.EUNAUTHORIZED, "the token has expired")
	}
	id = quan.Identity{Subject: c.Subject, Role: c.Role, ShopNo: c.ShopNo, UserID: c.UserID}
	if err := id.Validate(); err != nil {
		return quan.Identity{}, exp, nbf, true, err
	}
	exp = time.Unix(*c.ExpiresAt, 0)
	if c.NotBefore != nil {
		nbf = time.Unix(*c.NotBefore, 0)
	}
	return id, exp, nbf, true, nil
}

// tokenCacheSlots is how many verified tokens Tokens remembers. An entry
// is some 160 bytes, so a full cache holds about 10 MB.
const tokenCacheSlots = 1 << 16

// tokenCache remembers verified tokens: a token sent again skips the
// base64, JSON and HMAC of a verification (some 8µs, a good part of a
// claim's CPU in a flash sale, where each user sends one token again and
// again). Only tokens that passed the full check are put in, so garbage
// costs what it did and evicts nothing.
//
// It is direct-mapped: a token's SHA-256 picks its one slot, and a newer
// token evicts the one there. So its size is fixed whatever the number of
// distinct tokens, and a lookup is one atomic load with no lock to
// contend on. Entries hold the digest, not the token: a digest match is
// as good as a token match (SHA-256 resists collisions), takes 32 bytes
// instead of 200, and comparing digests in variable time leaks nothing
// about a genuine token.
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
		id, err := s.Tokens.Verify(strings.TrimSpace(token))
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(quan.NewContextWithIdentity(r.Context(), id)))
	})
}

// identity returns the caller's identity, or EUNAUTHORIZED if anonymous.
func identity(r *http.Request) (quan.Identity, error) {
	id := quan.IdentityFromContext(r.Context())
	if id.Role == "" {
		return id, quan.Errorf(quan.EUNAUTHORIZED, "this needs a bearer token")
	}
	return id, nil
}
