package quan

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// CouponEventSubject is the bus subject of coupon status changes.
const CouponEventSubject = "quan.coupon.status_changed"

// CouponEvent says a coupon's status changed, for downstream systems.
type CouponEvent struct {
	Coupon   int64        `json:"coupon"`
	User     int64        `json:"user"`
	Template int64        `json:"template"`
	Old      CouponStatus `json:"old"`
	New      CouponStatus `json:"new"`
	Order    string       `json:"order,omitempty"`
	At       time.Time    `json:"at"`
}

func eventOf(c *Coupon, old CouponStatus, now time.Time) CouponEvent {
	return CouponEvent{Coupon: c.ID, User: c.UserID, Template: c.TemplateID, Old: old, New: c.Status, Order: c.OrderID, At: now}
}

// MaxEventsPerMessage bounds the events one message on
// CouponEventSubject carries.
const MaxEventsPerMessage = 1000

// publish sends events on the bus, up to MaxEventsPerMessage in a
// message: a JSON array, in the order the changes were made. JetStream
// spends about as much on a message of one event as of a thousand: one
// event a message made the sweeper three times slower with a bus than
// without. They follow the commit: a publish that fails is logged, and the
// sweeper's and the next change's events go on.
func (s *WalletService) publish(ctx context.Context, events []CouponEvent) {
	if s.Bus == nil || len(events) == 0 {
		return
	}
	ms := make([]Message, 0, (len(events)+MaxEventsPerMessage-1)/MaxEventsPerMessage)
	for part := range slices.Chunk(events, MaxEventsPerMessage) {
		data, err := json.Marshal(part)
		if err != nil {
			s.logger().Error("encode coupon events", "events", len(part), "err", err)
			return
		}
		// A change is one coupon's, at one moment, to one status: the
		// first names the message (the bus drops a repeat of it).
		e := part[0]
		ms = append(ms, Message{Subject: CouponEventSubject, Data: data,
			ID: fmt.Sprintf("coupon-%d-%s-%d-%d", e.Coupon, e.New, e.At.UnixMicro(), len(part))})
	}
	if err := s.Bus.PublishMany(context.WithoutCancel(ctx), ms); err != nil {
		s.logger().Error("publish coupon events", "events", len(events), "messages", len(ms), "err", err)
	}
}

// DecodeCouponEvents reads a message of CouponEventSubject: a JSON array
// of events.
func DecodeCouponEvents(data []byte) ([]CouponEvent, error) {
	var es []CouponEvent
	if err := json.Unmarshal(data, &es); err != nil {
		return nil, Errorf(EINVALID, "coupon events: %v", err)
	}
	return es, nil
}
