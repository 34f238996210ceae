package facts_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/facts"
	"github.com/quanhq/quan/internal/testrig"
	"github.com/quanhq/quan/sqlite"
)

// factsT0 is the tests' time.
var factsT0 = time.Date(2030, 5, 1, 9, 0, 0, 0, time.UTC)

// countingFacts is a real store that counts its reads of facts.
type countingFacts struct {
	*sqlite.Store
	reads atomic.Int64
}

func (c *countingFacts) UserFacts(ctx context.Context, users []int64) (map[int64]*quan.UserFacts, error) {
	c.reads.Add(1)
	return c.Store.UserFacts(ctx, users)
}

func newAttributes(t *testing.T, clock *testrig.Clock) (*facts.Service, *countingFacts) {
	st := &countingFacts{Store: testrig.Store(t)}
	return &facts.Service{Store: st, Now: clock.At()}, st
}

func TestUserFactsValidate(t *testing.T) {
	long := strings.Repeat("x", quan.MaxFactBytes+1)
	many := func(n int) []string {
		tags := make([]string, n)
		for i := range tags {
			tags[i] = "t" + strings.Repeat("x", i)
		}
		return tags
	}
	manyAttrs := map[string]string{}
	for i := range quan.MaxUserAttrs + 1 {
		manyAttrs[strings.Repeat("k", i+1)] = "v"
	}
	for _, tt := range []struct {
		name   string
		facts  quan.UserFacts
		fields []string
	}{
		{"OK", quan.UserFacts{UserID: 1, Level: 2, Tags: many(quan.MaxUserTags), Region: strings.Repeat("x", quan.MaxFactBytes),
			Attrs: map[string]string{"vip": "", strings.Repeat("k", quan.MaxFactBytes): "v"}}, nil},
		{"ErrUserID", quan.UserFacts{}, []string{"userId"}},
		{"ErrNegative", quan.UserFacts{UserID: 1, Level: -1, Orders: -1}, []string{"level", "orders"}},
		{"ErrTooManyTags", quan.UserFacts{UserID: 1, Tags: many(quan.MaxUserTags + 1)}, []string{"tags"}},
		{"ErrTagLongOrEmpty", quan.UserFacts{UserID: 1, Tags: []string{"ok", long, ""}}, []string{"tags[1]", "tags[2]"}},
		{"ErrRegionLong", quan.UserFacts{UserID: 1, Region: long}, []string{"region"}},
		{"ErrNotUTF8", quan.UserFacts{UserID: 1, Region: "\xff"}, []string{"region"}},
		{"ErrTooManyAttrs", quan.UserFacts{UserID: 1, Attrs: manyAttrs}, []string{"attrs"}},
		{"ErrAttrs", quan.UserFacts{UserID: 1, Attrs: map[string]string{"": "x", long: "y", "v": long}}, []string{"attrs", "attrs.v", "attrs"}},
		{"ErrRegisteredAt", quan.UserFacts{UserID: 1, RegisteredAt: time.Date(1, 1, 2, 0, 0, 0, 0, time.UTC)}, []string{"registeredAt"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.facts.Validate()
			var got []string
			var qe *quan.Error
			if errors.As(err, &qe) {
				if qe.Code != quan.EINVALID {
					t.Errorf("code %s", qe.Code)
				}
				for _, f := range qe.Fields {
					if f.Message == "" {
						t.Errorf("%s: no message", f.Field)
					}
					got = append(got, f.Field)
				}
			} else if err != nil {
				t.Fatalf("Validate = %v, not an *Error", err)
			}
			if strings.Join(got, " ") != strings.Join(tt.fields, " ") {
				t.Errorf("fields %q (%v), want %q", got, err, tt.fields)
			}
		})
	}
}

// TestAttributeServicePutGet: only an admin puts; an admin reads anyone's
// facts and a user its own; a put replaces and answers what is stored.
func TestAttributeServicePutGet(t *testing.T) {
	ctx := t.Context()
	s, _ := newAttributes(t, testrig.NewClock(factsT0))
	user := quan.Identity{Role: quan.RoleUser, UserID: 7}
	merchant := quan.Identity{Role: quan.RoleMerchant, ShopNo: 1}
	in := quan.UserFacts{UserID: 7, Level: 2, Tags: []string{"vip", "vip", "new"}, RegisteredAt: time.Date(2024, 1, 2, 3, 4, 5, 6789, time.Local)}
	for _, who := range []quan.Identity{user, merchant, {}} {
		if _, err := s.Put(ctx, who, in); quan.ErrorCode(err) != quan.EFORBIDDEN && quan.ErrorCode(err) != quan.EUNAUTHORIZED {
			t.Errorf("Put as %+v = %v, want forbidden", who, err)
		}
	}
	got, err := s.Put(ctx, testrig.Admin, in)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got.Tags, ",") != "vip,new" || got.RegisteredAt.Location() != time.UTC || got.RegisteredAt.Nanosecond() != 6000 {
		t.Errorf("Put = %+v: want tags without repeats and the time in UTC to the microsecond", got)
	}
	if in.Tags[1] != "vip" {
		t.Error("Put changed the caller's tags")
	}
	for _, who := range []quan.Identity{testrig.Admin, user} {
		f, err := s.Get(ctx, who, 7)
		if err != nil || f.Level != 2 || strings.Join(f.Tags, ",") != "vip,new" || !f.RegisteredAt.Equal(got.RegisteredAt) {
			t.Errorf("Get as %s = %+v, %v", who.Role, f, err)
		}
	}
	for _, who := range []quan.Identity{{Role: quan.RoleUser, UserID: 8}, merchant} {
		if _, err := s.Get(ctx, who, 7); quan.ErrorCode(err) != quan.EFORBIDDEN {
			t.Errorf("Get as %+v = %v, want forbidden", who, err)
		}
	}
	if f, err := s.Get(ctx, testrig.Admin, 9); err != nil || f.UserID != 9 || f.Tags == nil || f.Level != 0 {
		t.Errorf("Get of a user with nothing on file = %+v, %v; want zero facts", f, err)
	}
	if _, err := s.Put(ctx, testrig.Admin, quan.UserFacts{UserID: 7, Level: -1}); quan.ErrorCode(err) != quan.EINVALID {
		t.Errorf("Put of invalid facts = %v", err)
	}
	if _, err := s.Put(ctx, testrig.Admin, quan.UserFacts{UserID: 7}); err != nil {
		t.Fatal(err)
	}
	if f, _ := s.Get(ctx, testrig.Admin, 7); f.Level != 0 || len(f.Tags) != 0 {
		t.Errorf("after a put of nothing: %+v; a put replaces", f)
	}
}

// TestAttributeServiceFacts: Facts reads the store once per user per TTL,
// unknown users included; a Put here is seen at once, a change made
// elsewhere within the TTL; the cache holds at most CacheSize users.
func TestAttributeServiceFacts(t *testing.T) {
	ctx := t.Context()
	clock := testrig.NewClock(factsT0)
	s, st := newAttributes(t, clock)
	s.CacheTTL, s.CacheSize = 30*time.Second, 64
	if _, err := s.Put(ctx, testrig.Admin, quan.UserFacts{UserID: 1, Level: 2, Tags: []string{"vip"}}); err != nil {
		t.Fatal(err)
	}
	factsOf := func(user int64) *quan.UserFacts {
		t.Helper()
		f, err := s.Facts(ctx, user)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	reads := func(want int64) {
		t.Helper()
		if n := st.reads.Swap(0); n != want {
			t.Errorf("%d store reads, want %d", n, want)
		}
	}
	for range 3 {
		if f := factsOf(1); f.Level != 2 || f.Tags[0] != "vip" {
			t.Fatalf("Facts(1) = %+v", f)
		}
		if f := factsOf(2); f.UserID != 2 || f.Level != 0 || f.Tags == nil {
			t.Fatalf("Facts(2), nothing on file = %+v", f)
		}
	}
	reads(2)
	// A put through the service is seen at once.
	if _, err := s.Put(ctx, testrig.Admin, quan.UserFacts{UserID: 2, Level: 5}); err != nil {
		t.Fatal(err)
	}
	if f := factsOf(2); f.Level != 5 {
		t.Errorf("Facts(2) after a Put = %+v", f)
	}
	reads(1)
	// Another process's change (straight in the store) is seen once the
	// TTL has passed, not before.
	if err := st.PutUserFacts(ctx, clock.Now(), []quan.UserFacts{{UserID: 1, Level: 3, Tags: []string{}}}); err != nil {
		t.Fatal(err)
	}
	clock.Add(29 * time.Second)
	if f := factsOf(1); f.Level != 2 {
		t.Errorf("Facts(1) within the TTL = %+v, want the cached level 2", f)
	}
	clock.Add(time.Second)
	if f := factsOf(1); f.Level != 3 {
		t.Errorf("Facts(1) after the TTL = %+v, want level 3", f)
	}
	reads(1)
	// Bounded: 1,000 users through a cache of 64.
	for u := int64(100); u < 1100; u++ {
		factsOf(u)
	}
	if n := facts.FactsCached(s); n > 64 || n < 32 {
		t.Errorf("%d users cached, want at most 64 (and not emptied)", n)
	}
}

// BenchmarkFactsHit is the hot path's read of a user's facts once the
// cache holds them.
func BenchmarkFactsHit(b *testing.B) {
	st := testrig.Store(b)
	s := &facts.Service{Store: st}
	ctx := context.Background()
	if _, err := s.Put(ctx, testrig.Admin, quan.UserFacts{UserID: 1, Level: 2, Tags: []string{"vip", "new"}}); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Facts(ctx, 1); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if f, err := s.Facts(ctx, 1); err != nil || f.Level != 2 {
				b.Fatal(f, err)
			}
		}
	})
}
