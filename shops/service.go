package shops

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/flight"
)

// DefaultSettingsTTL is how long a process serves a shop's settings it
// read (Service.CacheTTL 0): the longest a change made through another
// process goes unseen by claims here.
const DefaultSettingsTTL = 10 * time.Second

// Service reads and changes shops' settings, and serves them to the
// claim path from an in-process cache (DailyClaimCap).
type Service struct {
	Store  quan.ShopStore
	Now    quan.Clock // nil is time.Now
	Logger *slog.Logger
	// CacheTTL is how long DailyClaimCap serves a shop's setting it read;
	// 0 means DefaultSettingsTTL.
	CacheTTL time.Duration

	mu   sync.RWMutex
	caps map[int64]shopCapEntry
	gen  uint64 // changes forgotten: a read from before one is not kept
	read flight.Group
}

type shopCapEntry struct {
	cap   int64
	until time.Time
}

// maxCachedShops bounds the shops whose cap a process keeps; a sixteenth
// goes, at random, when it is full.
const maxCachedShops = 100_000

func (s *Service) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Logger
}

// canManageShop returns nil if who may read and change the settings of
// shop: its merchant or an admin. A merchant asking of another shop is
// EFORBIDDEN, as with a shop's statistics (stats.Service.Shop): shop
// numbers are not secret.
func canManageShop(who quan.Identity, shop int64) error {
	scope, err := who.ShopScope()
	if err != nil {
		return err
	}
	if scope != quan.AnyShop && scope != shop {
		return quan.Errorf(quan.EFORBIDDEN, "a merchant manages the settings of its own shop only")
	}
	if shop <= 0 {
		return &quan.Error{Code: quan.EINVALID, Message: "invalid shop", Fields: []quan.FieldError{{Field: "shopNo", Message: "must be a positive shop number"}}}
	}
	return nil
}

// Settings returns the settings of shop, read from the store. Its
// merchant or an admin may (EFORBIDDEN otherwise).
func (s *Service) Settings(ctx context.Context, who quan.Identity, shop int64) (*quan.ShopSettings, error) {
	if err := canManageShop(who, shop); err != nil {
		return nil, err
	}
	return s.Store.ShopSettings(ctx, shop)
}

// SetSettings replaces the settings of shop with in (its ShopNo is
// ignored) and returns them as stored. Its merchant or an admin may
// (EFORBIDDEN otherwise); settings out of range are EINVALID naming the
// field. The change is logged (the audit trail of settings) and seen by
// claims in this process at once, in others within CacheTTL.
func (s *Service) SetSettings(ctx context.Context, who quan.Identity, shop int64, in quan.ShopSettings) (*quan.ShopSettings, error) {
	if err := canManageShop(who, shop); err != nil {
		return nil, err
	}
	in.ShopNo = shop
	if err := in.Validate(); err != nil {
		return nil, err
	}
	old, err := s.Store.ShopSettings(ctx, shop)
	if err != nil {
		return nil, err
	}
	in.UpdatedAt = s.Now.UTC().UTC().Truncate(time.Microsecond)
	in.UpdatedBy = who.String()
	if err := s.Store.PutShopSettings(ctx, &in); err != nil {
		return nil, err
	}
	s.forget(shop)
	s.logger().Info("shop settings changed", "shop", shop, "by", in.UpdatedBy,
		"daily_claim_cap_before", old.DailyClaimCap, "daily_claim_cap", in.DailyClaimCap)
	return &in, nil
}

// DailyClaimCap returns the DailyClaimCap of shop for the claim path: from
// an in-process cache (a read lock, no allocation) when it holds it fresh,
// else from the store, kept for CacheTTL. A read that overlaps a
// SetSettings here is used but not kept.
func (s *Service) DailyClaimCap(ctx context.Context, shop int64) (int64, error) {
	now := s.Now.UTC()
	s.mu.RLock()
	e, ok := s.caps[shop]
	gen := s.gen
	s.mu.RUnlock()
	if ok && now.Before(e.until) {
		return e.cap, nil
	}
	// The claims that find the entry expired at once share one read.
	var st *quan.ShopSettings
	if err := s.read.Do(shop, func() (err error) { st, err = s.Store.ShopSettings(ctx, shop); return err }); err != nil {
		return 0, fmt.Errorf("settings of shop %d: %w", shop, err)
	}
	if st == nil { // another caller's read: it is kept now, unless a change came between
		return s.DailyClaimCap(ctx, shop)
	}
	ttl := s.CacheTTL
	if ttl <= 0 {
		ttl = DefaultSettingsTTL
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if gen == s.gen {
		if s.caps == nil {
			s.caps = map[int64]shopCapEntry{}
		}
		if _, ok := s.caps[shop]; !ok && len(s.caps) >= maxCachedShops {
			n := maxCachedShops / 16
			for k := range s.caps {
				delete(s.caps, k)
				if n--; n == 0 {
					break
				}
			}
		}
		s.caps[shop] = shopCapEntry{cap: st.DailyClaimCap, until: now.Add(ttl)}
	}
	return st.DailyClaimCap, nil
}

func (s *Service) forget(shop int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	delete(s.caps, shop)
}

// ShopClaimed returns how many coupons claims of shop's templates issued
// in [from, to), as the store counts them (ShopStore.ShopClaimed).
func (s *Service) ShopClaimed(ctx context.Context, shop int64, from, to time.Time) (int64, error) {
	return s.Store.ShopClaimed(ctx, shop, from, to)
}
