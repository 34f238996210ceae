package http

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/wallet"
)

// fullCoupon returns a coupon with every field set, by reflection, so that
// a field added to quan.Coupon and not to appendItem fails
// TestAppendCouponPage.
func fullCoupon(t testing.TB) *quan.Coupon {
	at := time.Date(2030, 3, 14, 11, 0, 0, 123456000, time.UTC)
	c := &quan.Coupon{}
	v := reflect.ValueOf(c).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch {
		case f.Type() == reflect.TypeFor[time.Time]():
			f.Set(reflect.ValueOf(at.Add(time.Duration(i) * time.Hour)))
		case f.Kind() == reflect.Int64:
			f.SetInt(int64(1000 + i))
		case f.Kind() == reflect.String:
			f.SetString("s" + v.Type().Field(i).Name)
		default:
			t.Fatalf("quan.Coupon.%s is a %s: fill it here and write it in appendItem", v.Type().Field(i).Name, f.Type())
		}
	}
	return c
}

// couponPageCases are wallet pages as they are written, and with what
// appendCouponPage leaves to encoding/json.
func couponPageCases(t testing.TB) []couponPage {
	display := &quan.TemplateDisplay{ID: 7, ShopNo: 1, Name: "满100减10 <new> & \"more\"", Kind: quan.KindDirect,
		RuleText: quan.BiText{ZH: "满100减10", EN: "10 off 100"}, Category: "饮品",
		Goods: []string{"a", "b"}, Metadata: map[string]string{"z": "1", "a": "2"},
		Validity: quan.Validity{Kind: quan.ValidRelative, Hours: 72}}
	displayJSON, err := json.Marshal(display)
	if err != nil {
		t.Fatal(err)
	}
	full := fullCoupon(t)
	bare := &quan.Coupon{ID: 1, TemplateID: 7, ShopNo: 1, UserID: 42, Seq: 1, Status: quan.CouponAvailable,
		ValidStart: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), ValidEnd: time.Date(2030, 1, 4, 0, 0, 0, 0, time.UTC),
		Source: quan.FromClaim}
	east := *bare
	east.ValidEnd = bare.ValidEnd.In(time.FixedZone("UTC+8", 8*3600))
	odd := *bare
	odd.ValidEnd = bare.ValidEnd.In(time.FixedZone("LMT", 8*3600+5*60+43))
	far := *bare
	far.ValidEnd = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	wide := *bare
	wide.Code = "券-1"
	quoted := *bare
	quoted.OrderID = `o"1`
	return []couponPage{
		{Items: []*wallet.Item{}, Total: 0, Offset: 0, Limit: 0},
		{Total: 3, Offset: 5},
		{Items: []*wallet.Item{{Coupon: full, Template: display, TemplateJSON: displayJSON}}, Total: 1, Limit: 1},
		{Items: []*wallet.Item{{Coupon: full, Template: display}, {Coupon: bare}, {Coupon: &east, Template: display, TemplateJSON: displayJSON}}, Total: 9, Offset: 2, Limit: 3},
		{Items: []*wallet.Item{{Coupon: bare, Template: display}, {Coupon: &odd, Template: display}}, Total: 2, Limit: 2},
		{Items: []*wallet.Item{{Coupon: bare}, {Coupon: &far}}, Total: 2, Limit: 2},
		{Items: []*wallet.Item{{Coupon: &wide}}, Total: 1, Limit: 1},
		{Items: []*wallet.Item{{Coupon: &quoted}}, Total: 1, Limit: 1},
		{Items: []*wallet.Item{{Template: display}}, Total: 1, Limit: 1},
	}
}

// TestAppendCouponPage: what appendCouponPage writes is what json.Encoder
// writes, byte for byte; what it cannot write it leaves.
func TestAppendCouponPage(t *testing.T) {
	fast := 0
	for i, p := range couponPageCases(t) {
		var want bytes.Buffer
		wantErr := json.NewEncoder(&want).Encode(p)
		got, ok := appendCouponPage([]byte("x"), p)
		if !ok {
			if string(got) != "x" {
				t.Errorf("page %d: not written, yet b is %q", i, got)
			}
			continue
		}
		fast++
		if wantErr != nil || string(got[1:]) != want.String() {
			t.Errorf("page %d:\n got %s\nwant %s (%v)", i, got[1:], want.String(), wantErr)
		}
	}
	// The pages with a zone offset of seconds, a year past 9999, a code
	// not in ASCII, an order with a quote or an item without a coupon are
	// left to encoding/json.
	if fast != 4 {
		t.Errorf("%d pages written without encoding/json, want 4", fast)
	}
}

// TestWriteCouponPage: the response writeCouponPage makes is writeJSON's.
func TestWriteCouponPage(t *testing.T) {
	s := &Server{}
	for i, p := range couponPageCases(t) {
		want, got := httptest.NewRecorder(), httptest.NewRecorder()
		s.writeJSON(want, http.StatusOK, p)
		s.writeCouponPage(got, http.StatusOK, p)
		if got.Code != want.Code || got.Body.String() != want.Body.String() || got.Header().Get("Content-Type") != want.Header().Get("Content-Type") {
			t.Errorf("page %d: %d %q %s, want %d %q %s", i, got.Code, got.Header(), got.Body, want.Code, want.Header(), want.Body)
		}
	}
}

// BenchmarkWalletPage writes a wallet page of 100 coupons of 100
// templates, as writeJSON did and as writeCouponPage does.
func BenchmarkWalletPage(b *testing.B) {
	full := fullCoupon(b)
	p := couponPage{Total: 200, Limit: 100}
	for i := range 100 {
		c := *full
		c.ID, c.TemplateID, c.OrderID, c.LockedUntil, c.Discount, c.TaskID = int64(i+1), int64(i+1), "", time.Time{}, 0, 0
		d := &quan.TemplateDisplay{ID: c.TemplateID, ShopNo: 1, Name: "满100减10", Kind: quan.KindDirect,
			RuleText: quan.BiText{ZH: "满100减10", EN: "10 off 100"}, ScopeText: quan.BiText{ZH: "全场通用", EN: "all goods"},
			Category: "饮品", LogoURL: "https://example.com/logo.png", Instructions: "到店出示",
			Validity: quan.Validity{Kind: quan.ValidRelative, Hours: 72}}
		j, err := json.Marshal(d)
		if err != nil {
			b.Fatal(err)
		}
		p.Items = append(p.Items, &wallet.Item{Coupon: &c, Template: d, TemplateJSON: j})
	}
	s := &Server{}
	for _, bc := range []struct {
		name  string
		write func(http.ResponseWriter, int, couponPage)
	}{
		{"writeJSON", func(w http.ResponseWriter, status int, p couponPage) { s.writeJSON(w, status, p) }},
		{"writeCouponPage", s.writeCouponPage},
	} {
		b.Run(bc.name, func(b *testing.B) {
			w := httptest.NewRecorder()
			b.ReportAllocs()
			for b.Loop() {
				w.Body.Reset()
				bc.write(w, http.StatusOK, p)
			}
		})
	}
}
