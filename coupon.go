package quan

import (
	"encoding/json"
	"time"
)

// CouponStatus is where a held coupon is in its life.
type CouponStatus string

// Coupon statuses.
const (
	CouponAvailable CouponStatus = "available"
	CouponLocked    CouponStatus = "locked"  // held by an unpaid order
	CouponUsed      CouponStatus = "used"    // spent on a paid order
	CouponExpired   CouponStatus = "expired" // its valid window closed unused
	CouponRevoked   CouponStatus = "revoked" // taken back by the merchant
)

// CouponSource says how a user got a coupon.
type CouponSource string

// Coupon sources.
const (
	FromDistribution CouponSource = "distribution"
	FromClaim        CouponSource = "claim"
	FromCode         CouponSource = "code"
)

// Coupon is one coupon a user holds, issued from a template.
type Coupon struct {
	ID         int64 `json:"id"`
	TemplateID int64 `json:"templateId"`
	ShopNo     int64 `json:"shopNo"`
	UserID     int64 `json:"userId"`
	// Seq is the user's receive sequence of the template, 1 … its per-user
	// limit. Coupons are never deleted, so a user holding n coupons of a
	// template holds seq 1 … n, and the next one issued is n+1.
	Seq int64 `json:"seq"`
	// Code is the coupon's own code: what a cashier types or scans. It is
	// not stored but made from ID and the template's CodePrefix with the
	// store's CodeKey, so it is the same every time the coupon is read,
	// and unique among all coupons.
	Code       string       `json:"code,omitempty"`
	Status     CouponStatus `json:"status"`
	ValidStart time.Time    `json:"validStart"`
	ValidEnd   time.Time    `json:"validEnd"`
	Source     CouponSource `json:"source"`
	TaskID     int64        `json:"taskId,omitempty"`  // the distribution task, if any
	OrderID    string       `json:"orderId,omitempty"` // the order holding or having used it
	// LockedUntil is when a lock runs out: a locked coupon is available
	// again from then on, by itself.
	LockedUntil time.Time `json:"lockedUntil,omitzero"`
	// LockKey identifies the request that locked the coupon for its order
	// (LockRequest.Key): locking the order again with the same request
	// answers the lock, with another one is a conflict. It goes with
	// OrderID.
	LockKey string `json:"-"`
	// Discount is what the coupon takes off the order that holds or used
	// it, in fen, as the lock priced it (its share of the order's
	// discount); 0 when no order holds it. It goes with OrderID.
	Discount  int64     `json:"discount,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// Usable reports whether c may be spent at now: available and inside its
// valid window.
func (c *Coupon) Usable(now time.Time) bool {
	return c.Status == CouponAvailable && !now.Before(c.ValidStart) && now.Before(c.ValidEnd)
}

// Lock holds an available, currently valid coupon for order until until.
// A coupon outside its window is expired instead and ErrTransition
// returned.
func (c *Coupon) Lock(order string, now, until time.Time) error {
	c.Lapse(now)
	if c.Status == CouponAvailable && !now.Before(c.ValidEnd) {
		c.set(CouponExpired, now)
	}
	if c.Status != CouponAvailable {
		return c.transitionErr("lock")
	}
	if now.Before(c.ValidStart) {
		return Errorf(ETRANSITION, "coupon %d is not valid before %s", c.ID, c.ValidStart.Format(time.RFC3339))
	}
	c.OrderID, c.LockedUntil = order, until
	c.set(CouponLocked, now)
	return nil
}

// Lapse applies what time alone does to a coupon at now: an available
// coupon whose window has closed expires, and a lock that ran out is
// released. It reports whether it changed c. Every read applies it, so a
// coupon is never shown available once expired, nor locked once its lock
// ran out, whether or not the sweeper has been by.
func (c *Coupon) Lapse(now time.Time) bool {
	switch {
	case c.Status == CouponAvailable && !now.Before(c.ValidEnd):
		c.set(CouponExpired, now)
		return true
	case c.Status == CouponLocked && !c.LockedUntil.IsZero() && !now.Before(c.LockedUntil):
		c.giveBack(now)
		return true
	}
	return false
}

// Release gives a locked coupon back (the order was cancelled or its lock
// timed out). It returns to available while valid, otherwise it expires.
func (c *Coupon) Release(now time.Time) error {
	c.Lapse(now)
	if c.Status != CouponLocked {
		return c.transitionErr("release")
	}
	c.giveBack(now)
	return nil
}

// Redeem spends a locked coupon: its order was paid.
func (c *Coupon) Redeem(now time.Time) error {
	c.Lapse(now) // a lock that ran out cannot be paid with
	if c.Status != CouponLocked {
		return c.transitionErr("redeem")
	}
	c.set(CouponUsed, now)
	return nil
}

// Refund gives a used coupon back after its order was refunded: available
// if still valid, expired otherwise. A refund never revives an expired
// coupon.
func (c *Coupon) Refund(now time.Time) error {
	if c.Status != CouponUsed {
		return c.transitionErr("refund")
	}
	c.giveBack(now)
	return nil
}

// Expire marks an available coupon whose window has closed as expired.
func (c *Coupon) Expire(now time.Time) error {
	if c.Status != CouponAvailable || now.Before(c.ValidEnd) {
		return c.transitionErr("expire")
	}
	c.set(CouponExpired, now)
	return nil
}

// Revoke takes back an available coupon. A locked one is refused: its
// order holds it and may be paid, so the order must release it first.
func (c *Coupon) Revoke(now time.Time) error {
	c.Lapse(now) // a lock that ran out no longer holds it
	if c.Status == CouponLocked {
		return Errorf(ETRANSITION, "cannot revoke coupon %d: order %s holds it (locked): release the order first", c.ID, c.OrderID)
	}
	if c.Status != CouponAvailable {
		return c.transitionErr("revoke")
	}
	c.OrderID, c.LockedUntil, c.LockKey, c.Discount = "", time.Time{}, "", 0
	c.set(CouponRevoked, now)
	return nil
}

// giveBack makes a coupon available again while it is valid, expired
// otherwise: a release or refund never revives an expired coupon.
func (c *Coupon) giveBack(now time.Time) {
	c.OrderID, c.LockedUntil, c.LockKey, c.Discount = "", time.Time{}, "", 0
	if now.Before(c.ValidEnd) {
		c.set(CouponAvailable, now)
	} else {
		c.set(CouponExpired, now)
	}
}

func (c *Coupon) set(s CouponStatus, now time.Time) {
	c.Status = s
	c.UpdatedAt = now
}

func (c *Coupon) transitionErr(verb string) error {
	return Errorf(ETRANSITION, "cannot %s coupon %d: it is %s", verb, c.ID, c.Status)
}

// CouponEventSubject is the bus subject of coupon status changes.
const CouponEventSubject = "quan.coupon.status_changed"

// CouponEvent says a coupon's status changed, for downstream systems.
// ID and Type are those of the outbox's Event (its relay publishes
// them): a consumer drops an ID it has seen.
type CouponEvent struct {
	ID       string       `json:"id,omitempty"`
	Type     EventType    `json:"type,omitempty"`
	Seq      int64        `json:"-"`
	Coupon   int64        `json:"coupon"`
	User     int64        `json:"user"`
	Template int64        `json:"template"`
	Old      CouponStatus `json:"old"`
	New      CouponStatus `json:"new"`
	Order    string       `json:"order,omitempty"`
	At       time.Time    `json:"at"`
}

// Event is the event of c's change from old to its status at now.
func (c *Coupon) Event(old CouponStatus, now time.Time) CouponEvent {
	return CouponEvent{Coupon: c.ID, User: c.UserID, Template: c.TemplateID, Old: old, New: c.Status, Order: c.OrderID, At: now}
}

// MaxEventsPerMessage bounds the events one message on
// CouponEventSubject carries.
const MaxEventsPerMessage = 1000

// DecodeCouponEvents reads a message of CouponEventSubject: a JSON array
// of events.
func DecodeCouponEvents(data []byte) ([]CouponEvent, error) {
	var es []CouponEvent
	if err := json.Unmarshal(data, &es); err != nil {
		return nil, Errorf(EINVALID, "coupon events: %v", err)
	}
	return es, nil
}
