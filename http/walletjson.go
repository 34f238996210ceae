package http

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/quanhq/quan/wallet"
)

// writeCouponPage writes p as writeJSON writes it, byte for byte, without
// encoding/json's reflection when appendCouponPage can: each coupon's
// fields appended, each template's display copied from the JSON the
// wallet keeps of it.
func (s *Server) writeCouponPage(w http.ResponseWriter, status int, p couponPage) {
	size := 64 // the page's own fields
	for _, it := range p.Items {
		size += couponJSONSize
		if it != nil {
			size += len(it.TemplateJSON)
		}
	}
	b, ok := appendCouponPage(make([]byte, 0, size), p)
	if !ok {
		s.writeJSON(w, status, p)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if _, err := w.Write(b); err != nil {
		s.logger().Debug("write response", "err", err)
	}
}

// couponJSONSize is room for one coupon's fields (some 400 bytes with
// every field set), so that a page is mostly written in one allocation.
const couponJSONSize = 448

// appendCouponPage appends p as json.Encoder writes it, newline included,
// and reports true; false (b unchanged) if an item has a string that would
// need escaping, a time encoding/json refuses, or no coupon.
func appendCouponPage(b []byte, p couponPage) ([]byte, bool) {
	start := len(b)
	b = append(b, `{"items":`...)
	if p.Items == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, it := range p.Items {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendItem(b, it); !ok {
				return b[:start], false
			}
		}
		b = append(b, ']')
	}
	b = append(b, `,"total":`...)
	b = strconv.AppendInt(b, int64(p.Total), 10)
	b = append(b, `,"offset":`...)
	b = strconv.AppendInt(b, int64(p.Offset), 10)
	b = append(b, `,"limit":`...)
	b = strconv.AppendInt(b, int64(p.Limit), 10)
	return append(b, "}\n"...), true
}

// appendItem appends it as encoding/json writes it within a page: the
// coupon's fields (quan.Coupon's tags), then its template's display.
func appendItem(b []byte, it *wallet.Item) ([]byte, bool) {
	if it == nil || it.Coupon == nil {
		return b, false
	}
	c := it.Coupon
	if !plainJSON(c.Code) || !plainJSON(string(c.Status)) || !plainJSON(string(c.Source)) || !plainJSON(c.OrderID) ||
		!jsonTime(c.ValidStart) || !jsonTime(c.ValidEnd) || !jsonTime(c.LockedUntil) || !jsonTime(c.CreatedAt) || !jsonTime(c.UpdatedAt) {
		return b, false
	}
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, c.ID, 10)
	b = append(b, `,"templateId":`...)
	b = strconv.AppendInt(b, c.TemplateID, 10)
	b = append(b, `,"shopNo":`...)
	b = strconv.AppendInt(b, c.ShopNo, 10)
	b = append(b, `,"userId":`...)
	b = strconv.AppendInt(b, c.UserID, 10)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, c.Seq, 10)
	if c.Code != "" {
		b = appendString(b, `,"code":`, c.Code)
	}
	b = appendString(b, `,"status":`, string(c.Status))
	b = appendTime(b, `,"validStart":`, c.ValidStart)
	b = appendTime(b, `,"validEnd":`, c.ValidEnd)
	b = appendString(b, `,"source":`, string(c.Source))
	if c.TaskID != 0 {
		b = append(b, `,"taskId":`...)
		b = strconv.AppendInt(b, c.TaskID, 10)
	}
	if c.OrderID != "" {
		b = appendString(b, `,"orderId":`, c.OrderID)
	}
	if !c.LockedUntil.IsZero() {
		b = appendTime(b, `,"lockedUntil":`, c.LockedUntil)
	}
	if c.Discount != 0 {
		b = append(b, `,"discount":`...)
		b = strconv.AppendInt(b, c.Discount, 10)
	}
	b = appendTime(b, `,"createdAt":`, c.CreatedAt)
	b = appendTime(b, `,"updatedAt":`, c.UpdatedAt)
	b = append(b, `,"template":`...)
	switch {
	case it.Template == nil:
		b = append(b, "null"...)
	case it.TemplateJSON != nil:
		b = append(b, it.TemplateJSON...)
	default:
		j, err := json.Marshal(it.Template)
		if err != nil {
			return b, false
		}
		b = append(b, j...)
	}
	return append(b, '}'), true
}

// appendString appends key and s, quoted, for s that plainJSON accepts.
func appendString(b []byte, key, s string) []byte {
	b = append(b, key...)
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendTime appends key and t as time.Time.MarshalJSON writes it, for t
// that jsonTime accepts.
func appendTime(b []byte, key string, t time.Time) []byte {
	b = append(b, key...)
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}
