package quan_test

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/quanhq/quan"
)

func TestClaimWireRoundTrip(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 6000, time.UTC)
	cs := []*quan.Claim{
		{ID: quan.NewClaimID(7, 42), TemplateID: 7, UserID: 42, Status: quan.ClaimPending, At: at},
		{ID: "c1-2-x", TemplateID: 1, UserID: math.MaxInt64, Status: quan.ClaimIssued, CouponID: 1 << 40, At: at, DecidedAt: at.Add(time.Second)},
		{ID: "用户的领取", TemplateID: -3, UserID: 0, Status: quan.ClaimFailed, Reason: "hand-off failed: 超时", At: at, DecidedAt: at},
		{}, // every field zero but the status
	}
	cs[3].Status = quan.ClaimPending
	b, err := quan.EncodeClaims(cs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := quan.DecodeClaims(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, cs) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, cs)
	}
	// Every cut of the message is refused with a message, never a panic.
	for i := range len(b) {
		if _, err := quan.DecodeClaims(b[:i]); !errors.Is(err, quan.ErrInvalid) {
			t.Fatalf("decoding the first %d of %d bytes: %v, want invalid", i, len(b), err)
		}
	}
	if _, err := quan.DecodeClaims(append(b, 0)); !errors.Is(err, quan.ErrInvalid) {
		t.Errorf("a trailing byte: %v, want invalid", err)
	}
	if _, err := quan.DecodeClaims([]byte(`{"id":"c1-2-x"}`)); !errors.Is(err, quan.ErrInvalid) {
		t.Errorf("JSON: %v, want invalid", err)
	}
	if _, err := quan.EncodeClaims([]*quan.Claim{{ID: "c1", Status: "bogus"}}); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("an unknown status: %v, want an error naming it", err)
	}
	// A pending claim is small: the point of the format.
	one, _ := quan.EncodeClaims(cs[:1])
	if len(one) > 48 {
		t.Errorf("one pending claim takes %d bytes, want at most 48", len(one))
	}
}

func FuzzDecodeClaims(f *testing.F) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 6000, time.UTC)
	for _, cs := range [][]*quan.Claim{
		nil,
		{{ID: "c1-2-abcdefghijklmnop", TemplateID: 1, UserID: 2, Status: quan.ClaimPending, At: at}},
		{{ID: "x", TemplateID: 1, UserID: 2, Status: quan.ClaimFailed, Reason: "out_of_stock", At: at, DecidedAt: at},
			{ID: "y", TemplateID: 1, UserID: 3, Status: quan.ClaimIssued, CouponID: 9, At: at, DecidedAt: at}},
	} {
		b, err := quan.EncodeClaims(cs)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"id":"c1-2-x","templateId":1,"userId":2}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		cs, err := quan.DecodeClaims(b)
		if err != nil {
			if !errors.Is(err, quan.ErrInvalid) {
				t.Fatalf("an undecodable message gave %v, want invalid", err)
			}
			return
		}
		again, err := quan.EncodeClaims(cs)
		if err != nil {
			t.Fatalf("decoded claims do not encode: %v", err)
		}
		got, err := quan.DecodeClaims(again)
		if err != nil {
			t.Fatalf("re-encoded claims do not decode: %v", err)
		}
		if !reflect.DeepEqual(got, cs) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, cs)
		}
	})
}
