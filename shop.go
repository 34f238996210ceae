package quan

import (
	"context"
	"fmt"
	"time"
)

// RefusedShopCap is the refusal of a claim by its shop's DailyClaimCap,
// as ClaimCounters count it: not a refusal of the template's reservation
// (Cache.Reserve never answers it), but of the shop's count before it.
const RefusedShopCap Refusal = ESHOPDAILYCAP

// MaxDailyClaimCap bounds ShopSettings.DailyClaimCap.
const MaxDailyClaimCap = 1_000_000_000

// ShopSettings are what a shop's merchant sets for the whole shop, across
// its templates.
type ShopSettings struct {
	ShopNo int64 `json:"shopNo"`
	// DailyClaimCap bounds the claims (POST …/claim) the shop's templates
	// accept together in one Asia/Shanghai day (ShanghaiDay); 0 sets no
	// cap. It caps claims only: distributions and codes issue regardless.
	DailyClaimCap int64     `json:"dailyClaimCap"`
	UpdatedAt     time.Time `json:"updatedAt,omitzero"`
	UpdatedBy     string    `json:"updatedBy,omitempty"`
}

// Validate refuses settings out of range, naming the field.
func (s *ShopSettings) Validate() error {
	var v Validation
	if s.ShopNo <= 0 {
		v.Add("shopNo", "must be a positive shop number")
	}
	switch {
	case s.DailyClaimCap < 0:
		v.Add("dailyClaimCap", "must not be negative (0: no cap)")
	case s.DailyClaimCap > MaxDailyClaimCap:
		v.Add("dailyClaimCap", fmt.Sprintf("must be at most %d", MaxDailyClaimCap))
	}
	return v.Err("invalid shop settings")
}

// ShopStore keeps shops' settings and answers what the shop's daily claim
// cap needs of the store.
type ShopStore interface {
	// ShopSettings returns the settings of shop; a shop that never set
	// any has zero settings (with ShopNo set), not ErrNotFound.
	ShopSettings(ctx context.Context, shop int64) (*ShopSettings, error)
	// PutShopSettings replaces the settings of s.ShopNo with s.
	PutShopSettings(ctx context.Context, s *ShopSettings) error
	// ShopClaimed returns how many coupons claims issued for the
	// templates of shop in the hours from from to before to (both on the
	// hour), as the hourly statistics count them: in the hour the store
	// decided each claim. What the shop's cap counter restarts from when
	// the cache lost it.
	ShopClaimed(ctx context.Context, shop int64, from, to time.Time) (int64, error)
}
