package http

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/quanhq/quan"
)

// Defaults of JWKSConfig.
const (
	DefaultJWKSRefresh   = 10 * time.Minute
	DefaultJWKSRefetch   = 30 * time.Second
	DefaultJWKSTimeout   = 5 * time.Second
	DefaultJWTUserClaim  = "sub"
	maxJWKSBytes         = 1 << 20
	minRSABits           = 2048
	maxExternalTokenSize = 16 << 10
)

// JWKSConfig says where the platform's identity provider publishes the
// keys of its shoppers' tokens and what those tokens must say. Issuer and
// Audience are required; the other zero fields take the defaults above.
type JWKSConfig struct {
	// Source is a file path or an http:// or https:// URL serving a JSON
	// Web Key Set ({"keys": [...]}) of RSA (RS256) and P-256 (ES256)
	// public keys.
	Source string
	// Issuer is the iss every token must carry; Audience one of its aud.
	Issuer   string
	Audience string
	// UserClaim names the claim holding the shopper's user id, a positive
	// whole number as a JSON number or string; default "sub".
	UserClaim string
	// AllowHS256 goes on accepting the tokens `quan token` mints (HS256,
	// the local secret) beside the provider's, for the time of a switch.
	AllowHS256 bool

	// RefreshEvery is how often the keys are read again (default 10m);
	// MinRefetch how soon after a read a token naming an unknown kid may
	// cause another (default 30s), so that made-up kids cannot hammer the
	// provider; Timeout bounds each read of a URL (default 5s).
	RefreshEvery time.Duration
	MinRefetch   time.Duration
	Timeout      time.Duration

	Client *http.Client     // nil: a client with Timeout
	Logger *slog.Logger     // nil discards
	Now    func() time.Time // nil: time.Now
}

// JWKS verifies shoppers' tokens signed by the platform's identity
// provider (RS256 or ES256) against the keys it publishes. The keys are
// read when it is made, again every RefreshEvery while Run runs, and
// again when a token names a key it does not know (at most once every
// MinRefetch). When a read fails, the keys read before go on serving.
// Its tokens only ever make shoppers (role user): staff and admins never
// come from the provider.
type JWKS struct {
	cfg  JWKSConfig
	keys atomic.Pointer[keySet]

	mu        sync.Mutex // one read of the keys at a time
	lastRead  time.Time  // of the last attempt, guarded by mu
	readCount atomic.Int64
}

// keySet is the keys of one read of the source, and the tokens verified
// with them: when the keys change the remembered tokens go with them, so
// that a key withdrawn by the provider no longer answers from memory.
type keySet struct {
	keys  []jwk
	cache *idpCache
}

// jwk is one usable key of the set.
type jwk struct {
	kid string
	alg string // RS256 or ES256, from the key's type
	key any    // *rsa.PublicKey or *ecdsa.PublicKey
	raw string // the key's parameters, to tell whether a set changed
}

// NewJWKS reads the key set at cfg.Source once and returns the verifier,
// or an error if the configuration is incomplete or the set cannot be
// read or holds no usable key.
func NewJWKS(ctx context.Context, cfg JWKSConfig) (*JWKS, error) {
	switch {
	case cfg.Source == "":
		return nil, errors.New("jwks: no source (a file or an http(s) URL)")
	case cfg.Issuer == "":
		return nil, errors.New("jwks: the issuer tokens must carry is required")
	case cfg.Audience == "":
		return nil, errors.New("jwks: the audience tokens must carry is required")
	}
	if cfg.UserClaim == "" {
		cfg.UserClaim = DefaultJWTUserClaim
	}
	if cfg.RefreshEvery <= 0 {
		cfg.RefreshEvery = DefaultJWKSRefresh
	}
	if cfg.MinRefetch <= 0 {
		cfg.MinRefetch = DefaultJWKSRefetch
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultJWKSTimeout
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: cfg.Timeout}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	j := &JWKS{cfg: cfg}
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.reload(ctx); err != nil {
		return nil, err
	}
	return j, nil
}

// AllowsHS256 reports whether HS256 tokens are still accepted beside the
// provider's.
func (j *JWKS) AllowsHS256() bool { return j.cfg.AllowHS256 }

// Reads is how many times the key set was read, successfully or not.
func (j *JWKS) Reads() int64 { return j.readCount.Load() }

// Run reads the keys again every RefreshEvery until ctx ends, logging a
// failed read and keeping the keys it had.
func (j *JWKS) Run(ctx context.Context) error {
	tick := time.NewTicker(j.cfg.RefreshEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		j.mu.Lock()
		err := j.reload(ctx)
		j.mu.Unlock()
		if err != nil && ctx.Err() == nil {
			j.cfg.Logger.Warn("jwks: read the identity provider's keys; the keys read before go on serving", "source", j.cfg.Source, "err", err)
		}
	}
}

// reload reads the source and, if its keys changed, puts them in force.
// The caller holds j.mu.
func (j *JWKS) reload(ctx context.Context) error {
	j.lastRead = j.cfg.Now()
	j.readCount.Add(1)
	raw, err := j.read(ctx)
	if err != nil {
		return err
	}
	keys, err := parseJWKS(raw)
	if err != nil {
		return fmt.Errorf("jwks %s: %w", j.cfg.Source, err)
	}
	if old := j.keys.Load(); old != nil && sameKeys(old.keys, keys) {
		return nil
	}
	j.keys.Store(&keySet{keys: keys, cache: newIDPCache(jwksCacheSlots)})
	j.cfg.Logger.Info("jwks: identity provider's keys in force", "source", j.cfg.Source, "keys", len(keys))
	return nil
}

// jwksCacheSlots is the size of a key set's cache of verified tokens
// (idpCache): 1 MiB of pointers, some 20 MiB once every slot holds a
// token.
const jwksCacheSlots = 1 << 17

// idpWays is how many slots of idpCache a token may take.
const idpWays = 4

// idpCache remembers the identity provider's tokens verified, as
// tokenCache does the minted ones, but 4-way set-associative: a token may
// take any of the 4 slots of its set, so that two tokens evict each other
// only when 5 fall in one set. Evicting an HS256 token costs its HMAC
// again, some 1 µs; evicting an RS256 or ES256 one costs its signature,
// 50 to 150 µs: with one slot a token, a flash sale's 36,000 tokens in
// 65,536 slots lost a quarter of theirs (bench claim --auth --warm-tokens).
// Entries never change once in a slot; a lookup is at most 4 atomic loads.
type idpCache struct {
	slots []atomic.Pointer[tokenEntry]
}

// newIDPCache returns a cache of n slots, n a positive multiple of idpWays.
func newIDPCache(n int) *idpCache {
	return &idpCache{slots: make([]atomic.Pointer[tokenEntry], n)}
}

func (c *idpCache) set(sum *[sha256.Size]byte) []atomic.Pointer[tokenEntry] {
	i := binary.LittleEndian.Uint64(sum[:8]) % uint64(len(c.slots)/idpWays) * idpWays
	return c.slots[i : i+idpWays]
}

// get returns the identity of the token with digest sum if it is in the
// cache and valid at now (nbf <= now < exp, as tokenCache.get).
func (c *idpCache) get(sum *[sha256.Size]byte, now time.Time) (quan.Identity, bool) {
	set := c.set(sum)
	for i := range set {
		if e := set[i].Load(); e != nil && e.sum == *sum {
			if now.Before(e.notBefore) || !now.Before(e.expires) {
				return quan.Identity{}, false
			}
			return e.id, true
		}
	}
	return quan.Identity{}, false
}

// put remembers a verified token in an empty slot of its set, or in
// place of the one that expires first.
func (c *idpCache) put(e *tokenEntry) {
	set := c.set(&e.sum)
	victim := 0
	var first time.Time
	for i := range set {
		old := set[i].Load()
		if old == nil || old.sum == e.sum {
			set[i].Store(e)
			return
		}
		if i == 0 || old.expires.Before(first) {
			victim, first = i, old.expires
		}
	}
	set[victim].Store(e)
}

func (j *JWKS) read(ctx context.Context) ([]byte, error) {
	src := j.cfg.Source
	if !strings.HasPrefix(src, "http://") && !strings.HasPrefix(src, "https://") {
		b, err := os.ReadFile(src)
		if err != nil {
			return nil, fmt.Errorf("jwks: %w", err)
		}
		return b, nil
	}
	ctx, cancel := context.WithTimeout(ctx, j.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
	if err != nil {
		return nil, fmt.Errorf("jwks: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	res, err := j.cfg.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("jwks: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("jwks: GET %s: %s", src, res.Status)
	}
	b, err := io.ReadAll(io.LimitReader(res.Body, maxJWKSBytes+1))
	if err != nil {
		return nil, fmt.Errorf("jwks: GET %s: %w", src, err)
	}
	if len(b) > maxJWKSBytes {
		return nil, fmt.Errorf("jwks: GET %s: more than %d bytes", src, maxJWKSBytes)
	}
	return b, nil
}

// parseJWKS returns the keys of a JSON Web Key Set usable to verify
// RS256 and ES256 signatures; keys of other types, curves or uses are
// left out. It is an error if none is left.
func parseJWKS(raw []byte) ([]jwk, error) {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(raw, &set); err != nil {
		return nil, fmt.Errorf("not a JSON Web Key Set: %w", err)
	}
	var keys []jwk
	var skipped []string
	for i, r := range set.Keys {
		k, err := parseJWK(r)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("key %d: %v", i, err))
			continue
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		if len(skipped) > 0 {
			return nil, fmt.Errorf("no usable RS256 or ES256 key (%s)", strings.Join(skipped, "; "))
		}
		return nil, errors.New("no keys")
	}
	return keys, nil
}

func parseJWK(raw json.RawMessage) (jwk, error) {
	var p struct {
		Kty, Kid, Alg, Use, Crv string
		N, E, X, Y              string
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return jwk{}, err
	}
	if p.Use != "" && p.Use != "sig" {
		return jwk{}, fmt.Errorf("use %q, not sig", p.Use)
	}
	b64 := base64.RawURLEncoding
	k := jwk{kid: p.Kid, raw: p.Kty + "." + p.Crv + "." + p.N + "." + p.E + "." + p.X + "." + p.Y}
	switch p.Kty {
	case "RSA":
		k.alg = jwt.SigningMethodRS256.Alg()
		n, err := b64.DecodeString(p.N)
		if err != nil {
			return jwk{}, fmt.Errorf("n: %w", err)
		}
		e, err := b64.DecodeString(p.E)
		if err != nil || len(e) == 0 || len(e) > 4 {
			return jwk{}, errors.New("e: not a base64url exponent of 1 to 4 bytes")
		}
		pub := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
		if pub.N.BitLen() < minRSABits {
			return jwk{}, fmt.Errorf("an RSA key of %d bits; at least %d needed", pub.N.BitLen(), minRSABits)
		}
		if pub.E < 3 || pub.E%2 == 0 {
			return jwk{}, fmt.Errorf("RSA exponent %d", pub.E)
		}
		k.key = pub
	case "EC":
		if p.Crv != "P-256" {
			return jwk{}, fmt.Errorf("curve %q; only P-256 (ES256)", p.Crv)
		}
		k.alg = jwt.SigningMethodES256.Alg()
		x, errX := b64.DecodeString(p.X)
		y, errY := b64.DecodeString(p.Y)
		if errX != nil || errY != nil || len(x) != 32 || len(y) != 32 {
			return jwk{}, errors.New("x, y: not 32 bytes of base64url each")
		}
		// ParseUncompressedPublicKey refuses a point off the curve.
		pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
		if err != nil {
			return jwk{}, fmt.Errorf("not a P-256 point: %w", err)
		}
		k.key = pub
	default:
		return jwk{}, fmt.Errorf("key type %q; only RSA and EC", p.Kty)
	}
	if p.Alg != "" && p.Alg != k.alg {
		return jwk{}, fmt.Errorf("alg %q on a key for %s", p.Alg, k.alg)
	}
	return k, nil
}

func sameKeys(a, b []jwk) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].kid != b[i].kid || a[i].raw != b[i].raw {
			return false
		}
	}
	return true
}

// find returns the key of s for a token's kid and alg. A token without a
// kid is taken only by a set with one key for its alg.
func (s *keySet) find(kid, alg string) (jwk, bool) {
	var found jwk
	n := 0
	for _, k := range s.keys {
		if k.alg != alg || (kid != "" && k.kid != kid) {
			continue
		}
		if kid != "" {
			return k, true
		}
		found, n = k, n+1
	}
	return found, n == 1
}

// key returns the set and key for a token's kid and alg, reading the
// source again if no key matches and the last read is more than
// MinRefetch ago. A request that finds a read under way waits for it.
func (j *JWKS) key(kid, alg string) (*keySet, jwk, bool) {
	s := j.keys.Load()
	if k, ok := s.find(kid, alg); ok {
		return s, k, true
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if s2 := j.keys.Load(); s2 != s { // read while this one waited
		k, ok := s2.find(kid, alg)
		return s2, k, ok
	}
	if j.cfg.Now().Sub(j.lastRead) < j.cfg.MinRefetch {
		return s, jwk{}, false
	}
	// Verify has no context of its own: the read is bounded by Timeout.
	if err := j.reload(context.Background()); err != nil {
		j.cfg.Logger.Warn("jwks: read the identity provider's keys for an unknown key id; the keys read before go on serving", "source", j.cfg.Source, "kid", kid, "err", err)
		return s, jwk{}, false
	}
	s = j.keys.Load()
	k, ok := s.find(kid, alg)
	return s, k, ok
}

// tokenHeader is what routes a token: its algorithm and key id.
type tokenHeader struct {
	Alg string `json:"alg"`
	Kid string `json:"kid"`
}

// headerOf decodes a token's header; ok is false if it is not a JWT's.
func headerOf(token string) (h tokenHeader, ok bool) {
	head, _, found := strings.Cut(token, ".")
	if !found || len(head) > 1024 {
		return h, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil || json.Unmarshal(raw, &h) != nil {
		return h, false
	}
	return h, true
}

// verify checks a token of the identity provider: its signature by a key
// of the set (RS256 or ES256 only, the algorithm the key's type demands),
// iss, aud, exp (required, in the future) and nbf (if present, past), and
// returns the shopper it names by UserClaim. Any failure is EUNAUTHORIZED.
// A token verified before with the keys in force is answered from memory
// until it expires. ok is false, with nothing decided, for a token whose
// header says HS256, as those `quan token` mints do: Tokens decides.
func (j *JWKS) verify(token string) (id quan.Identity, ok bool, err error) {
	if strings.HasPrefix(token, mintedHeader+".") {
		return id, false, nil
	}
	if len(token) > maxExternalTokenSize {
		return id, true, invalidToken()
	}
	now := j.cfg.Now()
	sum := sha256.Sum256([]byte(token))
	// Only tokens that passed every check below are in the cache, so a
	// hit needs no look at the header.
	if id, ok := j.keys.Load().cache.get(&sum, now); ok {
		return id, true, nil
	}
	if h, ok := headerOf(token); ok && h.Alg == jwt.SigningMethodHS256.Alg() {
		return id, false, nil
	}
	var set *keySet
	claims := jwt.MapClaims{}
	_, err = jwt.ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) {
		if _, ok := t.Header["crit"]; ok { // extensions quan does not know (RFC 7515 §4.1.11)
			return nil, errors.New("crit header")
		}
		kid, _ := t.Header["kid"].(string)
		s, k, ok := j.key(kid, t.Method.Alg())
		if !ok {
			return nil, fmt.Errorf("no key %q for %s", kid, t.Method.Alg())
		}
		set = s
		return k.key, nil
	},
		jwt.WithValidMethods([]string{jwt.SigningMethodRS256.Alg(), jwt.SigningMethodES256.Alg()}),
		jwt.WithIssuer(j.cfg.Issuer),
		jwt.WithAudience(j.cfg.Audience),
		jwt.WithExpirationRequired(),
		jwt.WithJSONNumber(),
		jwt.WithTimeFunc(j.cfg.Now),
	)
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return id, true, quan.Errorf(quan.EUNAUTHORIZED, "the token has expired")
	case err != nil:
		return id, true, invalidToken()
	}
	uid, valid := userIDClaim(claims[j.cfg.UserClaim])
	if !valid {
		return id, true, quan.Errorf(quan.EUNAUTHORIZED, "the token's %s claim is not a user id (a positive whole number)", j.cfg.UserClaim)
	}
	id = quan.Identity{Role: quan.RoleUser, UserID: uid}
	id.Subject = id.String()
	e := &tokenEntry{sum: sum, id: id}
	exp, _ := claims.GetExpirationTime() // required and checked above
	e.expires = exp.Time
	if nbf, _ := claims.GetNotBefore(); nbf != nil {
		e.notBefore = nbf.Time
	}
	set.cache.put(e)
	return id, true, nil
}

func invalidToken() error { return quan.Errorf(quan.EUNAUTHORIZED, "the token is invalid") }

// userIDClaim reads a user id: a positive whole number that fits int64,
// as a JSON number or a string of decimal digits.
func userIDClaim(v any) (int64, bool) {
	var s string
	switch v := v.(type) {
	case json.Number:
		s = v.String()
	case string:
		s = v
	default:
		return 0, false
	}
	if s == "" || strings.TrimLeft(s, "0123456789") != "" || s[0] == '0' {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n > 0
}
