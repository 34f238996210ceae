package quan

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// EventType names what an Event says happened.
type EventType string

// Event types. A coupon's are named by what was done to it; the event's
// data is the coupon after it.
const (
	EventCouponIssued   EventType = "coupon.issued"   // a distribution, a claim or a code gave it
	EventCouponLocked   EventType = "coupon.locked"   // an order holds it
	EventCouponRedeemed EventType = "coupon.redeemed" // an order paid with it (used)
	EventCouponReleased EventType = "coupon.released" // the order let it go, or its lock ran out
	EventCouponRefunded EventType = "coupon.refunded" // the order it paid was refunded
	EventCouponExpired  EventType = "coupon.expired"  // its window closed unused
	EventCouponRevoked  EventType = "coupon.revoked"  // the merchant took it back
	// EventTaskFinished: a distribution task ended (succeeded, failed
	// or canceled: data.status says which).
	EventTaskFinished EventType = "task.finished"
	// EventTemplateStatusChanged: a template was activated, paused or
	// ended.
	EventTemplateStatusChanged EventType = "template.status_changed"
)

// EventTypes lists every event type, in the order the documentation
// gives them.
var EventTypes = []EventType{
	EventCouponIssued, EventCouponLocked, EventCouponRedeemed, EventCouponReleased,
	EventCouponRefunded, EventCouponExpired, EventCouponRevoked,
	EventTaskFinished, EventTemplateStatusChanged,
}

// Valid reports whether t is one of EventTypes.
func (t EventType) Valid() bool {
	for _, e := range EventTypes {
		if t == e {
			return true
		}
	}
	return false
}

// Coupon reports whether t is a coupon's event: its data is a Coupon.
func (t EventType) Coupon() bool { return strings.HasPrefix(string(t), "coupon.") }

// CouponEventType names the event of a coupon's change of status from
// old to new, or "" if the change is none. A coupon given back expired
// (released or refunded after its window closed) is named by what was
// done to it, except a lock that ran out past the window, which the
// sweeper or a read finds expired: what a consumer of coupon.expired
// wants to hear of.
func CouponEventType(old, new CouponStatus) EventType {
	switch {
	case old == new:
		return ""
	case new == CouponLocked:
		return EventCouponLocked
	case new == CouponUsed:
		return EventCouponRedeemed
	case new == CouponRevoked:
		return EventCouponRevoked
	case old == CouponUsed:
		return EventCouponRefunded
	case new == CouponExpired:
		return EventCouponExpired
	case old == CouponLocked:
		return EventCouponReleased
	}
	return ""
}

// Event is one thing that happened that systems downstream may want to
// hear of, recorded in the transaction of the change (the outbox) and
// relayed from there to the bus and the webhooks at least once.
type Event struct {
	// Seq is the event's place in the outbox: ascending in the order the
	// events were recorded (within one engine), never reused.
	Seq  int64     `json:"-"`
	Type EventType `json:"type"`
	// ShopNo is the shop of the object; UserID its user (the coupon's
	// holder), 0 for templates and tasks.
	ShopNo int64 `json:"shopNo"`
	UserID int64 `json:"userId,omitempty"`
	// ObjectID is the id of the coupon, task or template.
	ObjectID  int64     `json:"objectId"`
	CreatedAt time.Time `json:"createdAt"`
	// Data is the object after the change, as the API shows it: a
	// Coupon, Task or Template.
	Data json.RawMessage `json:"data"`
	// Previous is a coupon's status before the change; "" for one
	// issued and for other objects.
	Previous CouponStatus `json:"previousStatus,omitempty"`
	// Attempts counts the times a relay took the event.
	Attempts int `json:"-"`
	// Coupon is Data decoded, for a coupon's event the store read.
	Coupon *Coupon `json:"-"`
}

// EventSubjectPrefix starts the bus subject of every event but a
// coupon's, which go on CouponEventSubject.
const EventSubjectPrefix = "quan.events."

// EventSubject is the bus subject of events of type t other than a
// coupon's: "quan.events.task.finished".
func EventSubject(t EventType) string { return EventSubjectPrefix + string(t) }

// CouponEvent is a coupon event as CouponEventSubject carries it.
func (e *Event) CouponEvent() (CouponEvent, error) {
	c := e.Coupon
	if c == nil {
		c = new(Coupon)
		if err := json.Unmarshal(e.Data, c); err != nil {
			return CouponEvent{}, fmt.Errorf("event %s: %w", e.ID(), err)
		}
	}
	return CouponEvent{ID: e.ID(), Type: e.Type, Seq: e.Seq, Coupon: c.ID, User: c.UserID, Template: c.TemplateID,
		Old: e.Previous, New: c.Status, Order: c.OrderID, At: e.CreatedAt}, nil
}

// EventIDPrefix starts every event id.
const EventIDPrefix = "evt_"

// ID is the event's stable id, "evt_" and its Seq: what consumers
// de-duplicate by.
func (e *Event) ID() string { return EventIDPrefix + strconv.FormatInt(e.Seq, 10) }

// ParseEventID returns the Seq of an id made by Event.ID, or EINVALID.
func ParseEventID(id string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimPrefix(id, EventIDPrefix), 10, 64)
	if err != nil || n <= 0 || !strings.HasPrefix(id, EventIDPrefix) {
		return 0, Errorf(EINVALID, "event id %q: want %s and a number", id, EventIDPrefix)
	}
	return n, nil
}

// MarshalJSON writes the event as webhooks and the bus carry it, with
// its id.
func (e Event) MarshalJSON() ([]byte, error) {
	type plain Event
	return json.Marshal(struct {
		ID string `json:"id"`
		plain
	}{e.ID(), plain(e)})
}

// UnmarshalJSON reads what MarshalJSON writes, Seq from the id.
func (e *Event) UnmarshalJSON(b []byte) error {
	type plain Event
	var v struct {
		ID string `json:"id"`
		plain
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	seq, err := ParseEventID(v.ID)
	if err != nil {
		return err
	}
	*e = Event(v.plain)
	e.Seq = seq
	return nil
}

// TaskEvent is the event of task t's end from status old, or nil if t
// has not ended or had ended before.
func TaskEvent(old TaskStatus, t *Task) (*Event, error) {
	if old.Done() || !t.Status.Done() {
		return nil, nil
	}
	data, err := json.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("the event of task %d: %w", t.ID, err)
	}
	return &Event{Type: EventTaskFinished, ShopNo: t.ShopNo, ObjectID: t.ID, CreatedAt: t.UpdatedAt, Data: data}, nil
}

// TemplateEvent is the event of template t's change of status from
// old, or nil if its status is old.
func TemplateEvent(old TemplateStatus, t *Template) (*Event, error) {
	if t.Status == old {
		return nil, nil
	}
	data, err := json.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("the event of template %d: %w", t.ID, err)
	}
	return &Event{Type: EventTemplateStatusChanged, ShopNo: t.ShopNo, ObjectID: t.ID, CreatedAt: t.UpdatedAt, Data: data}, nil
}

// EventStore keeps the outbox: the events recorded with the changes
// they tell of, until a relay has passed them on.
//
// Events are written by the store itself, in the transaction of the
// change: every coupon whose status a WalletStore method changes, every
// coupon ApplyChunk, IssueClaims or RedeemCode issues (in the same
// batched statements), every task UpdateTask ends and every template
// whose status UpdateTemplate changes.
type EventStore interface {
	// TakeEvents gives owner up to limit events not yet relayed that no
	// other relay holds (never taken, or their lease ran out), lowest
	// Seq first, each with one more Attempt, held until lease. Two
	// owners taking at once never get the same event.
	TakeEvents(ctx context.Context, owner string, now, lease time.Time, limit int) ([]*Event, error)
	// FinishEvents marks the events seqs that owner still holds relayed
	// at now and returns how many it marked; an event another owner took
	// since (owner's lease ran out) is left to it.
	FinishEvents(ctx context.Context, owner string, now time.Time, seqs []int64) (int, error)
	// Events returns up to limit events with a Seq above after, relayed
	// or not, lowest first.
	Events(ctx context.Context, after int64, limit int) ([]*Event, error)
	// PendingEvents returns how many events are not relayed yet and the
	// CreatedAt of the oldest (zero if none).
	PendingEvents(ctx context.Context) (int64, time.Time, error)
	// DeleteEvents deletes up to limit relayed events created before
	// before and returns how many: the retention sweep calls it until it
	// returns fewer than limit.
	DeleteEvents(ctx context.Context, before time.Time, limit int) (int, error)
}
