package apikeys

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/quanhq/quan"
)

// DefaultCacheFor is how long a process trusts a key it verified before
// it asks the store again: how long a revocation takes, at most, to reach
// every process.
const DefaultCacheFor = 5 * time.Second

// TouchEvery is how often, at most, a key's last use is written: a key
// used by every request costs one write a minute, not one per request.
const TouchEvery = time.Minute

// keyBytes is the randomness of a key: 32 bytes, 43 characters of
// base64url after the prefix.
const keyBytes = 32

// maxCached bounds the keys a process remembers; a process that sees more
// (someone trying keys at random) starts again.
const maxCached = 4096

// Service makes and checks service keys.
type Service struct {
	Keys quan.APIKeyStore
	// Secrets holds the key keys are hashed with (quan.SecretAPIKeys),
	// the same for every process on one store.
	Secrets quan.SecretStore
	Now     quan.Clock
	Logger  *slog.Logger // nil discards
	// CacheFor is how long a verified key is trusted without asking the
	// store; 0 means DefaultCacheFor.
	CacheFor time.Duration

	mu      sync.Mutex
	macs    sync.Pool // of *keyMAC, keyed with secret
	secret  []byte
	cache   map[[sha256.Size]byte]entry
	touched map[int64]time.Time // when each key's last use was written
}

// entry is a key as the store answered at checked: its identity, or why
// it is refused.
type entry struct {
	id      quan.Identity
	err     error
	checked time.Time
}

// NewKey is what Create makes a key of.
type NewKey struct {
	Name   string          `json:"name"`
	ShopNo int64           `json:"shopNo"` // 0: the platform
	Scopes []quan.KeyScope `json:"scopes"`
}

// Create makes a key for an admin and returns it with its secret, which
// is never shown again: the store keeps only its keyed hash. Bad input
// is EINVALID naming the field.
func (s *Service) Create(ctx context.Context, who quan.Identity, in NewKey) (*quan.APIKey, string, error) {
	if err := quan.RequireAdmin(who, "make service keys"); err != nil {
		return nil, "", err
	}
	k := &quan.APIKey{Name: strings.TrimSpace(in.Name), ShopNo: in.ShopNo, Scopes: in.Scopes,
		CreatedAt: s.Now.UTC(), CreatedBy: who.String()}
	if err := k.Validate(); err != nil {
		return nil, "", err
	}
	k.Scopes = quan.NewScopeSet(k.Scopes...).List()
	raw := make([]byte, keyBytes)
	if _, err := rand.Read(raw); err != nil {
		return nil, "", fmt.Errorf("make a service key: %w", err)
	}
	secret := quan.APIKeyPrefix + base64.RawURLEncoding.EncodeToString(raw)
	hash, err := s.hash(ctx, secret)
	if err != nil {
		return nil, "", err
	}
	k.Hash, k.Hint = hash[:], secret[:len(quan.APIKeyPrefix)+4]
	if err := s.Keys.CreateAPIKey(ctx, k); err != nil {
		return nil, "", fmt.Errorf("make service key %q: %w", k.Name, err)
	}
	s.logger().Info("service key made", "key", k.ID, "name", k.Name, "shop", k.ShopNo, "scopes", k.Scopes, "by", k.CreatedBy)
	return k, secret, nil
}

// List returns every key, revoked ones too, newest first, to an admin.
func (s *Service) List(ctx context.Context, who quan.Identity) ([]*quan.APIKey, error) {
	if err := quan.RequireAdmin(who, "list service keys"); err != nil {
		return nil, err
	}
	ks, err := s.Keys.APIKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("list service keys: %w", err)
	}
	if ks == nil {
		ks = []*quan.APIKey{}
	}
	return ks, nil
}

// Revoke revokes key id for an admin: it is refused by this process at
// once and by every other within CacheFor. Revoking it again changes
// nothing. ErrNotFound for no key id.
func (s *Service) Revoke(ctx context.Context, who quan.Identity, id int64) (*quan.APIKey, error) {
	if err := quan.RequireAdmin(who, "revoke service keys"); err != nil {
		return nil, err
	}
	k, err := s.Keys.RevokeAPIKey(ctx, id, s.Now.UTC())
	if err != nil {
		return nil, fmt.Errorf("revoke service key %d: %w", id, err)
	}
	s.mu.Lock()
	for h, e := range s.cache {
		if e.id.KeyID == id {
			delete(s.cache, h)
		}
	}
	s.mu.Unlock()
	s.logger().Info("service key revoked", "key", k.ID, "name", k.Name, "by", who.String())
	return k, nil
}

// IsKey reports whether token looks like a service key rather than a JWT.
func IsKey(token string) bool { return strings.HasPrefix(token, quan.APIKeyPrefix) }

// Authenticate returns the identity of a request made with key: a
// RoleService identity with the key's owner and scopes. A key unknown or
// revoked is EUNAUTHORIZED. What the store answered is trusted for
// CacheFor; the key's last use is written at most every TouchEvery.
func (s *Service) Authenticate(ctx context.Context, key string) (quan.Identity, error) {
	if !IsKey(key) || len(key) > 100 {
		return quan.Identity{}, quan.Errorf(quan.EUNAUTHORIZED, "the service key is invalid")
	}
	hash, err := s.hash(ctx, key)
	if err != nil {
		return quan.Identity{}, err
	}
	now := s.Now.UTC()
	cacheFor := s.CacheFor
	if cacheFor <= 0 {
		cacheFor = DefaultCacheFor
	}
	s.mu.Lock()
	e, ok := s.cache[hash]
	s.mu.Unlock()
	if !ok || now.Sub(e.checked) >= cacheFor || now.Before(e.checked) {
		e = entry{checked: now}
		k, err := s.Keys.APIKeyByHash(ctx, hash[:])
		switch {
		case errors.Is(err, quan.ErrNotFound):
			e.err = quan.Errorf(quan.EUNAUTHORIZED, "the service key is invalid")
		case err != nil:
			return quan.Identity{}, fmt.Errorf("authenticate a service key: %w", err)
		case k.Revoked():
			e.err = quan.Errorf(quan.EUNAUTHORIZED, "the service key was revoked")
		default:
			e.id = k.Identity()
		}
		s.mu.Lock()
		if s.cache == nil || len(s.cache) >= maxCached {
			s.cache = make(map[[sha256.Size]byte]entry)
		}
		s.cache[hash] = e
		s.mu.Unlock()
	}
	if e.err != nil {
		return quan.Identity{}, e.err
	}
	s.touch(ctx, e.id.KeyID, now)
	return e.id, nil
}

// touch writes key's last use at now if it was not written in the last
// TouchEvery. A failure is logged, not the request's.
func (s *Service) touch(ctx context.Context, key int64, now time.Time) {
	s.mu.Lock()
	last, ok := s.touched[key]
	due := !ok || now.Sub(last) >= TouchEvery || now.Before(last)
	if due {
		if s.touched == nil || len(s.touched) >= maxCached {
			s.touched = make(map[int64]time.Time)
		}
		s.touched[key] = now
	}
	s.mu.Unlock()
	if !due {
		return
	}
	if err := s.Keys.TouchAPIKey(ctx, key, now); err != nil {
		s.logger().Warn("write a service key's last use", "key", key, "err", err)
	}
}

// hash is the HMAC-SHA256 of key under the store's secret. The keyed
// states are pooled: hmac.New costs about a microsecond and six
// allocations, a Reset none.
func (s *Service) hash(ctx context.Context, key string) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	m, ok := s.macs.Get().(*keyMAC)
	if !ok {
		s.mu.Lock()
		secret := s.secret
		s.mu.Unlock()
		if secret == nil {
			var err error
			if secret, err = s.Secrets.Secret(ctx, quan.SecretAPIKeys); err != nil {
				return sum, fmt.Errorf("the service keys' secret: %w", err)
			}
			s.mu.Lock()
			s.secret = secret
			s.mu.Unlock()
		}
		m = &keyMAC{h: hmac.New(sha256.New, secret)}
	}
	m.buf = append(m.buf[:0], key...)
	m.h.Write(m.buf)
	m.h.Sum(sum[:0])
	m.h.Reset()
	s.macs.Put(m)
	return sum, nil
}

// keyMAC is a keyed HMAC and the buffer of the key it hashes.
type keyMAC struct {
	h   hash.Hash
	buf []byte
}

func (s *Service) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Logger
}
