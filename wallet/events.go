package wallet

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/quanhq/quan"
)

// publish sends events on the bus, up to MaxEventsPerMessage in a
// message: a JSON array, in the order the changes were made. JetStream
// spends about as much on a message of one event as of a thousand: one
// event a message made the sweeper three times slower with a bus than
// without. They follow the commit: a publish that fails is logged, and the
// sweeper's and the next change's events go on.
func (s *Service) publish(ctx context.Context, events []quan.CouponEvent) {
	if s.Bus == nil || len(events) == 0 {
		return
	}
	ms := make([]quan.Message, 0, (len(events)+quan.MaxEventsPerMessage-1)/quan.MaxEventsPerMessage)
	for part := range slices.Chunk(events, quan.MaxEventsPerMessage) {
		data, err := json.Marshal(part)
		if err != nil {
			s.logger().Error("encode coupon events", "events", len(part), "err", err)
			return
		}
		// A change is one coupon's, at one moment, to one status: the
		// first names the message (the bus drops a repeat of it).
		e := part[0]
		ms = append(ms, quan.Message{Subject: quan.CouponEventSubject, Data: data,
			ID: fmt.Sprintf("coupon-%d-%s-%d-%d", e.Coupon, e.New, e.At.UnixMicro(), len(part))})
	}
	if err := s.Bus.PublishMany(context.WithoutCancel(ctx), ms); err != nil {
		s.logger().Error("publish coupon events", "events", len(events), "messages", len(ms), "err", err)
	}
}
