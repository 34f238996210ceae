package http

import (
	"crypto/sha256"
	"testing"
	"time"

	"github.com/quanhq/quan"
)

// TestIDPCacheWays: a set keeps four tokens; a fifth takes the place of
// the one that expires first; a token is not answered outside nbf–exp.
func TestIDPCacheWays(t *testing.T) {
	c := newIDPCache(idpWays) // one set: every token falls in it
	now := time.Date(2026, 11, 11, 0, 0, 0, 0, time.UTC)
	entry := func(n int64, expires time.Duration) *tokenEntry {
		return &tokenEntry{sum: sha256.Sum256([]byte{byte(n)}), id: quan.Identity{Role: quan.RoleUser, UserID: n},
			expires: now.Add(expires)}
	}
	es := []*tokenEntry{entry(1, 4*time.Hour), entry(2, time.Hour), entry(3, 3*time.Hour), entry(4, 2*time.Hour)}
	for _, e := range es {
		c.put(e)
	}
	for _, e := range es {
		if id, ok := c.get(&e.sum, now); !ok || id != e.id {
			t.Fatalf("user %d: %+v, %v; want it kept", e.id.UserID, id, ok)
		}
	}
	fifth := entry(5, 5*time.Hour)
	c.put(fifth)
	for _, e := range append(es, fifth) {
		_, ok := c.get(&e.sum, now)
		if want := e.id.UserID != 2; ok != want {
			t.Errorf("user %d cached %v, want %v (user 2, expiring first, evicted)", e.id.UserID, ok, want)
		}
	}
	if _, ok := c.get(&es[0].sum, now.Add(4*time.Hour)); ok {
		t.Error("a token answered at its exp")
	}
	late := entry(6, time.Hour)
	late.notBefore = now.Add(time.Minute)
	c.put(late)
	if _, ok := c.get(&late.sum, now); ok {
		t.Error("a token answered before its nbf")
	}
}
