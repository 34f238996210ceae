package http

import (
	"net/http"
	"strconv"
	"time"

	"github.com/quanhq/quan"
)

// claimJSON is a claim as the API writes it: a failed one with what its
// reason means, in words (quan.DescribeClaimReason).
type claimJSON struct {
	*quan.Claim
	Message string `json:"message,omitempty"`
}

// newClaimJSON returns c as the API writes it.
func newClaimJSON(c *quan.Claim) claimJSON {
	v := claimJSON{Claim: c}
	if c.Reason != "" {
		v.Message = quan.DescribeClaimReason(c.Reason)
	}
	return v
}

// writeClaim writes c as writeJSON writes newClaimJSON(c), byte for byte,
// without encoding/json when appendClaimJSON can: a 202 is the answer to
// most requests of a flash sale.
func (s *Server) writeClaim(w http.ResponseWriter, status int, c *quan.Claim) {
	v := newClaimJSON(c)
	b, ok := appendClaimJSON(make([]byte, 0, 256), v)
	if !ok {
		s.writeJSON(w, status, v)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if _, err := w.Write(b); err != nil {
		s.logger().Debug("write response", "err", err)
	}
}

// appendClaimJSON appends v as json.Encoder writes it, newline included,
// and reports true; false (b unchanged) for a claim with a string that
// would need escaping or a time encoding/json refuses.
func appendClaimJSON(b []byte, v claimJSON) ([]byte, bool) {
	c := v.Claim
	if !plainJSON(c.ID) || !plainJSON(string(c.Status)) || !plainJSON(c.Reason) || !plainJSON(v.Message) ||
		!jsonTime(c.At) || (!c.DecidedAt.IsZero() && !jsonTime(c.DecidedAt)) {
		return b, false
	}
	b = append(b, `{"id":"`...)
	b = append(b, c.ID...)
	b = append(b, `","templateId":`...)
	b = strconv.AppendInt(b, c.TemplateID, 10)
	b = append(b, `,"userId":`...)
	b = strconv.AppendInt(b, c.UserID, 10)
	b = append(b, `,"status":"`...)
	b = append(b, c.Status...)
	b = append(b, '"')
	if c.CouponID != 0 {
		b = append(b, `,"couponId":`...)
		b = strconv.AppendInt(b, c.CouponID, 10)
	}
	if c.Reason != "" {
		b = append(b, `,"reason":"`...)
		b = append(b, c.Reason...)
		b = append(b, '"')
	}
	b = append(b, `,"at":"`...)
	b = c.At.AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	if !c.DecidedAt.IsZero() {
		b = append(b, `,"decidedAt":"`...)
		b = c.DecidedAt.AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	if v.Message != "" {
		b = append(b, `,"message":"`...)
		b = append(b, v.Message...)
		b = append(b, '"')
	}
	return append(b, "}\n"...), true
}

// plainJSON reports whether s is written as it is inside a JSON string by
// encoding/json: printable ASCII other than the quote, the backslash and
// the characters it escapes for HTML.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; {
		case ch < 0x20 || ch >= 0x7f, ch == '"', ch == '\\', ch == '<', ch == '>', ch == '&':
			return false
		}
	}
	return true
}

// jsonTime reports whether t is one time.Time.MarshalJSON writes in
// RFC 3339 with nanoseconds: a year of four digits, and a zone offset of
// whole minutes within a day.
func jsonTime(t time.Time) bool {
	if y := t.Year(); y < 0 || y > 9999 {
		return false
	}
	_, off := t.Zone()
	return off%60 == 0 && off > -24*3600 && off < 24*3600
}
