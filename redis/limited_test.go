package redis

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/quanhq/quan"
)

// twoTrips is the Cache's ReserveLimited as in a cluster: Allow, then
// Reserve, whatever Redis it runs on.
type twoTrips struct{ *Cache }

func (c twoTrips) ReserveLimited(ctx context.Context, template int64, key string, users []int64, now time.Time, buckets []quan.Bucket) (int, time.Duration, []quan.Refusal, error) {
	return c.allowThenReserve(ctx, template, key, users, now, buckets)
}

// countingClient counts the round trips to Redis: a command by Do, a
// pipeline by DoMulti.
type countingClient struct {
	rueidis.Client
	trips atomic.Int64
}

func (c *countingClient) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.trips.Add(1)
	return c.Client.Do(ctx, cmd)
}

func (c *countingClient) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	c.trips.Add(1)
	return c.Client.DoMulti(ctx, cmds...)
}

var limitedNow = time.Date(2030, 3, 14, 9, 0, 0, 0, time.UTC)

// loadTemplate primes template id, active at limitedNow, with stock and a
// per-user limit of 5.
func loadTemplate(t testing.TB, c *Cache, id, stock int64) {
	t.Helper()
	st := quan.TemplateState{ID: id, ShopNo: 1, Status: quan.TemplateActive, IssueStart: limitedNow.Add(-time.Hour),
		IssueEnd: limitedNow.Add(time.Hour), PerUserLimit: 5, Stock: stock}
	var none iter.Seq2[quan.Holding, error] = func(func(quan.Holding, error) bool) {}
	if err := c.Prime(t.Context(), st, none); err != nil {
		t.Fatal(err)
	}
}

// tokensLeft counts the tokens b holds (up to its burst) by taking them.
func tokensLeft(t *testing.T, c *Cache, b quan.Bucket) int {
	t.Helper()
	for n := 0; n <= b.Burst; n++ {
		refused, _, err := c.Allow(t.Context(), b)
		if err != nil {
			t.Fatal(err)
		}
		if refused >= 0 {
			return n
		}
	}
	t.Fatalf("bucket %s holds more than its burst", b.Key)
	return 0
}

// TestReserveLimited runs the contract of quan.LimitedReserver on one
// script call and on the cluster's two round trips.
func TestReserveLimited(t *testing.T) {
	for _, way := range []struct {
		name string
		lr   func(c *Cache) quan.LimitedReserver
	}{
		{"OneScript", func(c *Cache) quan.LimitedReserver { return c }},
		{"Cluster", func(c *Cache) quan.LimitedReserver { return twoTrips{c} }},
	} {
		t.Run(way.name, func(t *testing.T) {
			t.Parallel()
			user := func(burst int) quan.Bucket { return quan.Bucket{Key: "claim:user:1", Rate: 0.01, Burst: burst} }
			tpl := func(burst int) quan.Bucket { return quan.Bucket{Key: "claim:template:1", Rate: 0.01, Burst: burst} }

			t.Run("OK", func(t *testing.T) {
				t.Parallel()
				// The same batches on two templates, one by Reserve, one by
				// ReserveLimited, end the same.
				c := newTestCache(t)
				lr := way.lr(c)
				loadTemplate(t, c, 1, 3)
				loadTemplate(t, c, 2, 3)
				batches := [][]int64{{1}, {1, 2}, {3, 1, 4}, {5}}
				keys := []string{"a", "b", "a", "c"} // "a" again: its first outcomes
				for i, users := range batches {
					want, err := c.Reserve(t.Context(), 1, keys[i], users, limitedNow)
					if err != nil {
						t.Fatal(err)
					}
					refused, _, got, err := lr.ReserveLimited(t.Context(), 2, keys[i], users, limitedNow,
						[]quan.Bucket{{Key: "claim:user:1", Rate: 1e6, Burst: 1000}, {Key: "claim:template:2", Rate: 1e6, Burst: 1000}})
					if err != nil || refused != -1 || !slices.Equal(got, want) {
						t.Fatalf("batch %d: refused %d, %v, %v; Reserve answered %v", i, refused, got, err, want)
					}
				}
				for _, u := range []int64{1, 2, 3, 4, 5} {
					h1, err1 := c.Held(t.Context(), 1, u)
					h2, err2 := c.Held(t.Context(), 2, u)
					if err1 != nil || err2 != nil || h1 != h2 {
						t.Errorf("user %d holds %d by Reserve, %d by ReserveLimited (%v, %v)", u, h1, h2, err1, err2)
					}
				}
				s1, _ := c.State(t.Context(), 1)
				s2, _ := c.State(t.Context(), 2)
				if s1.Stock != s2.Stock {
					t.Errorf("stock %d by Reserve, %d by ReserveLimited", s1.Stock, s2.Stock)
				}
				if r, err := c.Reservation(t.Context(), 2, "b"); err != nil || !slices.Equal(r, []quan.Refusal{"", ""}) {
					t.Errorf("reservation b: %v, %v", r, err)
				}
			})

			t.Run("RateLimited", func(t *testing.T) {
				t.Parallel()
				c := newTestCache(t)
				lr := way.lr(c)
				loadTemplate(t, c, 1, 10)
				bs := []quan.Bucket{tpl(5), user(1)}
				if refused, _, out, err := lr.ReserveLimited(t.Context(), 1, "k1", []int64{1}, limitedNow, bs); err != nil || refused != -1 || !slices.Equal(out, []quan.Refusal{""}) {
					t.Fatalf("first: refused %d, %v, %v", refused, out, err)
				}
				refused, wait, out, err := lr.ReserveLimited(t.Context(), 1, "k2", []int64{1}, limitedNow, bs)
				if err != nil || refused != 1 || out != nil || wait < 99*time.Second || wait > 100*time.Second {
					t.Fatalf("second: refused %d after %s, %v, %v; want the user's bucket, about 100s", refused, wait, out, err)
				}
				if _, err := c.Reservation(t.Context(), 1, "k2"); !errors.Is(err, quan.ErrNotFound) {
					t.Errorf("reservation of the refused call: %v, want ErrNotFound", err)
				}
				if st, _ := c.State(t.Context(), 1); st.Stock != 9 {
					t.Errorf("stock %d, want 9", st.Stock)
				}
				if n := tokensLeft(t, c, tpl(5)); n != 4 {
					t.Errorf("the template's bucket holds %d, want 4: the refusal took none", n)
				}
			})

			t.Run("NewUserRefusedByTemplate", func(t *testing.T) {
				t.Parallel()
				c := newTestCache(t)
				lr := way.lr(c)
				loadTemplate(t, c, 1, 10)
				newUser := func(id int) quan.Bucket {
					return quan.Bucket{Key: "claim:user:new" + strconv.Itoa(id), Rate: 0.01, Burst: 3}
				}
				if refused, _, _, err := lr.ReserveLimited(t.Context(), 1, "k1", []int64{1}, limitedNow, []quan.Bucket{newUser(1), tpl(1)}); err != nil || refused != -1 {
					t.Fatalf("first: refused %d, %v", refused, err)
				}
				// The template's bucket is empty: a user never seen is
				// refused, and its bucket stays as it was, full.
				refused, _, _, err := lr.ReserveLimited(t.Context(), 1, "k2", []int64{2}, limitedNow, []quan.Bucket{newUser(2), tpl(1)})
				if err != nil || refused != 1 {
					t.Fatalf("second: refused %d, %v; want the template's bucket", refused, err)
				}
				if n := tokensLeft(t, c, newUser(2)); n != 3 {
					t.Errorf("the refused user's bucket holds %d, want 3", n)
				}
				if n := tokensLeft(t, c, newUser(1)); n != 2 {
					t.Errorf("the first user's bucket holds %d, want 2", n)
				}
			})

			t.Run("ErrCacheCold", func(t *testing.T) {
				t.Parallel()
				c := newTestCache(t)
				lr := way.lr(c)
				_, _, _, err := lr.ReserveLimited(t.Context(), 1, "k", []int64{1}, limitedNow, []quan.Bucket{user(2), tpl(3)})
				if !errors.Is(err, quan.ErrCacheCold) {
					t.Fatalf("cold: %v, want ErrCacheCold", err)
				}
				if n := tokensLeft(t, c, user(2)); n != 2 {
					t.Errorf("the user's bucket holds %d, want 2", n)
				}
				if n := tokensLeft(t, c, tpl(3)); n != 3 {
					t.Errorf("the template's bucket holds %d, want 3", n)
				}
			})

			t.Run("SoldOut", func(t *testing.T) {
				t.Parallel()
				c := newTestCache(t)
				lr := way.lr(c)
				loadTemplate(t, c, 1, 0)
				refused, _, out, err := lr.ReserveLimited(t.Context(), 1, "k", []int64{1}, limitedNow, []quan.Bucket{user(2)})
				if err != nil || refused != -1 || !slices.Equal(out, []quan.Refusal{quan.RefusedSoldOut}) {
					t.Fatalf("refused %d, %v, %v; want sold_out", refused, out, err)
				}
				if n := tokensLeft(t, c, user(2)); n != 1 {
					t.Errorf("the user's bucket holds %d, want 1: a sold-out claim costs a token", n)
				}
			})

			t.Run("Window", func(t *testing.T) {
				t.Parallel()
				// To the nanosecond, in the seconds the window starts and
				// ends in, whose nanoseconds the script reads.
				c := newTestCache(t)
				lr := way.lr(c)
				start := limitedNow.Add(-time.Hour + 123456789*time.Nanosecond)
				end := limitedNow.Add(time.Hour + 987654321*time.Nanosecond)
				st := quan.TemplateState{ID: 1, ShopNo: 1, Status: quan.TemplateActive, IssueStart: start, IssueEnd: end, PerUserLimit: 5, Stock: 10}
				var none iter.Seq2[quan.Holding, error] = func(func(quan.Holding, error) bool) {}
				if err := c.Prime(t.Context(), st, none); err != nil {
					t.Fatal(err)
				}
				for i, tc := range []struct {
					at   time.Time
					want quan.Refusal
				}{
					{start.Add(-time.Nanosecond), quan.RefusedNotStarted},
					{start.Add(-time.Second), quan.RefusedNotStarted},
					{start, ""},
					{end.Add(-time.Nanosecond), ""},
					{end, quan.RefusedEnded},
					{end.Add(time.Second), quan.RefusedEnded},
				} {
					_, _, out, err := lr.ReserveLimited(t.Context(), 1, fmt.Sprint("w", i), []int64{int64(1 + i)}, tc.at, []quan.Bucket{user(10)})
					if err != nil || !slices.Equal(out, []quan.Refusal{tc.want}) {
						t.Errorf("at %s: %v, %v; want %q", tc.at.Format(time.RFC3339Nano), out, err, tc.want)
					}
				}
			})

			t.Run("KeySeenBefore", func(t *testing.T) {
				t.Parallel()
				c := newTestCache(t)
				lr := way.lr(c)
				loadTemplate(t, c, 1, 10)
				for range 2 {
					refused, _, out, err := lr.ReserveLimited(t.Context(), 1, "k", []int64{1}, limitedNow, []quan.Bucket{user(3)})
					if err != nil || refused != -1 || !slices.Equal(out, []quan.Refusal{""}) {
						t.Fatalf("refused %d, %v, %v", refused, out, err)
					}
				}
				if st, _ := c.State(t.Context(), 1); st.Stock != 9 {
					t.Errorf("stock %d, want 9: one reservation", st.Stock)
				}
				if n := tokensLeft(t, c, user(3)); n != 1 {
					t.Errorf("the user's bucket holds %d, want 1: each call costs a token", n)
				}
			})
		})
	}
}

// TestReserveLimitedOneTrip: off a cluster, a claim's rate limit and
// reservation are one round trip to Redis.
func TestReserveLimitedOneTrip(t *testing.T) {
	c := newTestCache(t)
	loadTemplate(t, c, 1, 1000)
	cc := &countingClient{Client: c.client}
	counted := &Cache{client: cc, prefix: c.prefix}
	claim := func(i int) {
		t.Helper()
		refused, _, out, err := counted.ReserveLimited(t.Context(), 1, "k"+strconv.Itoa(i), []int64{int64(i)}, limitedNow,
			[]quan.Bucket{{Key: "claim:user:" + strconv.Itoa(i), Rate: 1e6, Burst: 1000}, {Key: "claim:template:1", Rate: 1e6, Burst: 1000}})
		if err != nil || refused != -1 || !slices.Equal(out, []quan.Refusal{""}) {
			t.Fatalf("claim %d: refused %d, %v, %v", i, refused, out, err)
		}
	}
	claim(0) // may load the script: EVALSHA, NOSCRIPT, EVAL
	cc.trips.Store(0)
	const claims = 50
	for i := range claims {
		claim(i + 1)
	}
	if n := cc.trips.Load(); n != claims {
		t.Errorf("%d round trips for %d claims, want one each", n, claims)
	}
}
