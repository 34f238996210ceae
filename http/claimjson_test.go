package http

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/quanhq/quan"
)

// claimJSONCases are claims as they are written: pending, issued, failed,
// and with what appendClaimJSON leaves to encoding/json.
func claimJSONCases() []quan.Claim {
	at := time.Date(2030, 3, 14, 11, 0, 0, 123456000, time.UTC)
	east := time.FixedZone("UTC+8", 8*3600)
	odd := time.FixedZone("LMT", 8*3600+5*60+43)
	return []quan.Claim{
		{ID: quan.NewClaimID(7, 42), TemplateID: 7, UserID: 42, Status: quan.ClaimPending, At: at},
		{ID: "c1-2-abc", TemplateID: 1, UserID: 2, Status: quan.ClaimPending, At: at.Truncate(time.Second)},
		{ID: "c1-2-abc", TemplateID: 1, UserID: 2, Status: quan.ClaimIssued, CouponID: 99, At: at.In(east), DecidedAt: at.Add(time.Millisecond)},
		{ID: "c1-2-abc", TemplateID: 1, UserID: 2, Status: quan.ClaimFailed, Reason: string(quan.CauseOutOfStock), At: at, DecidedAt: at},
		{ID: "c1-2-abc", TemplateID: 1, UserID: 2, Status: quan.ClaimFailed, Reason: quan.ReasonAbandoned, At: at, DecidedAt: at},
		{ID: "c1-2-abc", TemplateID: 1, UserID: 2, Status: quan.ClaimFailed, Reason: "an unknown reason", At: at, DecidedAt: at},
		{ID: "c1-2-abc", TemplateID: -1, UserID: 0, Status: quan.ClaimFailed, Reason: "hand-off failed: <timeout> & \"more\"", At: at},
		{ID: "c1-2-ä", Status: quan.ClaimPending, At: at},
		{ID: "c1-2-abc", Status: quan.ClaimPending, At: at.In(odd)},
		{ID: "c1-2-abc", Status: quan.ClaimPending, At: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{ID: "c1-2-abc", Status: quan.ClaimPending},
	}
}

// TestAppendClaimJSON: what appendClaimJSON writes is what json.Encoder
// writes, byte for byte; what it cannot write it leaves.
func TestAppendClaimJSON(t *testing.T) {
	fast := 0
	for _, c := range claimJSONCases() {
		var want bytes.Buffer
		wantErr := json.NewEncoder(&want).Encode(newClaimJSON(&c))
		got, ok := appendClaimJSON([]byte("x"), newClaimJSON(&c))
		if !ok {
			if string(got) != "x" {
				t.Errorf("%+v: not written, yet b is %q", c, got)
			}
			continue
		}
		fast++
		if wantErr != nil || string(got[1:]) != want.String() {
			t.Errorf("%+v:\n got %q\nwant %q (%v)", c, got[1:], want.String(), wantErr)
		}
	}
	// The out-of-stock claim's message is the cause's bilingual text, which
	// appendClaimJSON leaves to encoding/json like other non-ASCII text.
	if fast != 6 {
		t.Errorf("%d claims written without encoding/json, want 6", fast)
	}
}

// TestWriteClaim: the response writeClaim makes is writeJSON's.
func TestWriteClaim(t *testing.T) {
	s := &Server{}
	for _, c := range claimJSONCases() {
		want, got := httptest.NewRecorder(), httptest.NewRecorder()
		s.writeJSON(want, http.StatusAccepted, newClaimJSON(&c))
		s.writeClaim(got, http.StatusAccepted, &c)
		if got.Code != want.Code || got.Body.String() != want.Body.String() || got.Header().Get("Content-Type") != want.Header().Get("Content-Type") {
			t.Errorf("%+v: %d %q %q, want %d %q %q", c, got.Code, got.Header(), got.Body, want.Code, want.Header(), want.Body)
		}
	}
}

// FuzzAppendClaimJSON: for any strings and times, appendClaimJSON writes
// what json.Encoder does, or nothing.
func FuzzAppendClaimJSON(f *testing.F) {
	f.Add("c1-2-abc", "pending", "", int64(1), int64(2), int64(0), int64(1900000000123456789), int64(0), 0)
	f.Add("c1-2-abc", "failed", "a <b> & \"c\"", int64(-1), int64(2), int64(3), int64(-62135596800000000), int64(5), 3600*8+1)
	f.Fuzz(func(t *testing.T, id, status, reason string, tpl, user, coupon, atNanos, decidedNanos int64, offset int) {
		zone := time.FixedZone("z", offset%(48*3600))
		c := quan.Claim{ID: id, TemplateID: tpl, UserID: user, Status: quan.ClaimStatus(status), CouponID: coupon, Reason: reason,
			At: time.Unix(0, atNanos).In(zone)}
		if decidedNanos != 0 {
			c.DecidedAt = time.Unix(0, decidedNanos).UTC()
		}
		got, ok := appendClaimJSON(nil, newClaimJSON(&c))
		if !ok {
			return
		}
		var want bytes.Buffer
		if err := json.NewEncoder(&want).Encode(newClaimJSON(&c)); err != nil || string(got) != want.String() {
			t.Fatalf("%+v:\n got %q\nwant %q (%v)", c, got, want.String(), err)
		}
	})
}
