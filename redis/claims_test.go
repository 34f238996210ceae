package redis

import (
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/quanhq/quan"
)

// TestReserveLimitedTogether: concurrent claims share script calls, and
// each gets what it would have got alone: of a template loaded with 50,
// exactly 50 are reserved and the rest are sold out; of a template with
// room for all, all are; of a cold one, each is ErrCacheCold; of one whose
// state is broken (a key of the wrong type), each fails with Redis's error
// and nothing is written for them.
func TestReserveLimitedTogether(t *testing.T) {
	c := newTestCache(t)
	cc := &countingClient{Client: c.client}
	counted := &Cache{client: cc, prefix: c.prefix}
	loadTemplate(t, c, 1, 50)
	loadTemplate(t, c, 2, 1000)
	broken := c.keys(4)
	if err := c.client.Do(t.Context(), c.client.B().Set().Key(broken.state()).Value("not a hash").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	const perTemplate = 100
	type result struct {
		refused int
		out     []quan.Refusal
		err     error
	}
	results := make([][]result, 5)
	for tpl := 1; tpl <= 4; tpl++ {
		results[tpl] = make([]result, perTemplate)
	}
	var wg sync.WaitGroup
	for i := range perTemplate {
		for tpl := int64(1); tpl <= 4; tpl++ {
			wg.Go(func() {
				u := int64(i + 1)
				refused, _, out, err := counted.ReserveLimited(t.Context(), tpl, "claim"+strconv.Itoa(i), []int64{u}, limitedNow,
					[]quan.Bucket{{Key: "claim:user:" + strconv.FormatInt(u, 10), Rate: 1, Burst: 10}, {Key: "claim:template:" + strconv.FormatInt(tpl, 10), Rate: 1e-3, Burst: 1000}})
				results[tpl][i] = result{refused, out, err}
			})
		}
	}
	wg.Wait()
	count := func(tpl int, want quan.Refusal) int {
		n := 0
		for _, r := range results[tpl] {
			if r.err == nil && r.refused == -1 && slices.Equal(r.out, []quan.Refusal{want}) {
				n++
			}
		}
		return n
	}
	if ok, sold := count(1, ""), count(1, quan.RefusedSoldOut); ok != 50 || sold != 50 {
		t.Errorf("template 1 (stock 50): %d reserved, %d sold out; want 50 and 50", ok, sold)
	}
	if ok := count(2, ""); ok != perTemplate {
		t.Errorf("template 2: %d reserved, want %d", ok, perTemplate)
	}
	for i, r := range results[3] {
		if !errors.Is(r.err, quan.ErrCacheCold) {
			t.Fatalf("claim %d of the cold template: %+v, want ErrCacheCold", i, r)
		}
	}
	for i, r := range results[4] {
		if r.err == nil || errors.Is(r.err, quan.ErrCacheCold) {
			t.Fatalf("claim %d of the broken template: %+v, want Redis's error", i, r)
		}
	}
	if n := cc.trips.Load(); n >= 4*perTemplate {
		t.Errorf("%d round trips for %d claims: the claims did not go together", n, 4*perTemplate)
	}
	for tpl, want := range map[int64]int64{1: 0, 2: 1000 - perTemplate} {
		if st, err := c.State(t.Context(), tpl); err != nil || st.Stock != want {
			t.Errorf("template %d: stock %d, %v; want %d", tpl, st.Stock, err, want)
		}
	}
	// Each user took a token from its bucket for templates 1 and 2 (10 -
	// 2 = 8 left), none for the cold and the broken one.
	if n := tokensLeft(t, c, quan.Bucket{Key: "claim:user:7", Rate: 1, Burst: 10}); n != 8 {
		t.Errorf("user 7's bucket holds %d, want 8", n)
	}
	if n := tokensLeft(t, c, quan.Bucket{Key: "claim:template:4", Rate: 1e-3, Burst: 1000}); n != 1000 {
		t.Errorf("the broken template's bucket holds %d, want 1000", n)
	}
	if n, err := c.client.Do(t.Context(), c.client.B().Exists().Key(broken.users(), broken.record("claim1")).Build()).AsInt64(); err != nil || n != 0 {
		t.Errorf("%d keys written for the broken template (%v), want none", n, err)
	}
}

// TestReserveClaimsMixed: one batch of claims that differ in template,
// second, nanosecond, number of users and buckets (none, the user's
// alone, the user's and the template's in either order) goes out as
// several script calls, and each claim gets what it would alone, in the
// batch's order: a user's bucket met twice in one call is taken twice, a
// key met again answers its first outcomes.
func TestReserveClaimsMixed(t *testing.T) {
	c := newTestCache(t)
	ctx := t.Context()
	loadTemplate(t, c, 1, 1000)
	loadTemplate(t, c, 3, 2)
	start := limitedNow.Add(500 * time.Millisecond) // template 4 starts within a second
	none := func(func(quan.Holding, error) bool) {}
	if err := c.Prime(ctx, quan.TemplateState{ID: 4, ShopNo: 1, Status: quan.TemplateActive, IssueStart: start,
		IssueEnd: limitedNow.Add(time.Hour), PerUserLimit: 5, Stock: 10}, none); err != nil {
		t.Fatal(err)
	}
	userB := func(u int64) quan.Bucket {
		return quan.Bucket{Key: "claim:user:" + strconv.FormatInt(u, 10), Rate: 1e-3, Burst: 10}
	}
	tplB := func(tpl int64) quan.Bucket {
		return quan.Bucket{Key: "claim:template:" + strconv.FormatInt(tpl, 10), Rate: 1e-3, Burst: 1000}
	}
	type want struct {
		refused int // -1: none
		out     []quan.Refusal
		cold    bool
	}
	var (
		reqs  []claimReq
		wants []want
	)
	add := func(tpl int64, key string, users []int64, now time.Time, bs []quan.Bucket, w want) {
		reqs = append(reqs, claimReq{template: tpl, key: key, users: users, now: now, buckets: bs})
		wants = append(wants, w)
	}
	ok := want{refused: -1, out: []quan.Refusal{""}}
	for i := range int64(10) {
		s := strconv.FormatInt(i, 10)
		add(1, "a"+s, []int64{1 + i}, limitedNow, []quan.Bucket{userB(1 + i), tplB(1)}, ok)
		add(1, "b"+s, []int64{100 + i}, limitedNow, nil, ok)
		add(1, "d"+s, []int64{200 + i}, limitedNow.Add(-time.Hour-time.Nanosecond), []quan.Bucket{userB(200 + i), tplB(1)},
			want{refused: -1, out: []quan.Refusal{quan.RefusedNotStarted}})
		e := want{refused: 0}
		if i < 5 {
			e = ok
		}
		add(1, "e"+s, []int64{300}, limitedNow, []quan.Bucket{{Key: "claim:user:300", Rate: 1e-3, Burst: 5}}, e)
		add(1, "f"+s, []int64{400 + 2*i, 401 + 2*i}, limitedNow, []quan.Bucket{userB(400 + 2*i), tplB(1)},
			want{refused: -1, out: []quan.Refusal{"", ""}})
		add(1, "h"+s, []int64{500 + i}, limitedNow, []quan.Bucket{tplB(1), userB(500 + i)}, ok)
		add(2, "c"+s, []int64{600 + i}, limitedNow, []quan.Bucket{userB(600 + i), tplB(2)}, want{cold: true})
		sold := ok
		if i >= 2 {
			sold = want{refused: -1, out: []quan.Refusal{quan.RefusedSoldOut}}
		}
		add(3, "s"+s, []int64{700 + i}, limitedNow, []quan.Bucket{userB(700 + i), tplB(3)}, sold)
	}
	add(4, "w0", []int64{800}, start.Add(-time.Nanosecond), nil, want{refused: -1, out: []quan.Refusal{quan.RefusedNotStarted}})
	add(4, "w1", []int64{801}, start, nil, ok)
	add(1, "a0", []int64{1}, limitedNow, []quan.Bucket{userB(1), tplB(1)}, ok) // again

	res, err := c.reserveClaims(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		w := wants[i]
		switch {
		case w.cold:
			if !errors.Is(r.err, quan.ErrCacheCold) {
				t.Errorf("claim %s: %+v, want ErrCacheCold", reqs[i].key, r)
			}
		case r.err != nil || r.refused != w.refused || !slices.Equal(r.out, w.out):
			t.Errorf("claim %s: refused %d, %q, %v; want refused %d, %q", reqs[i].key, r.refused, r.out, r.err, w.refused, w.out)
		case w.refused == 0 && r.wait < 900*time.Second:
			t.Errorf("claim %s: refused with a wait of %s, want about 1000s", reqs[i].key, r.wait)
		}
	}
	for tpl, want := range map[int64]int64{1: 1000 - 10 - 10 - 5 - 20 - 10, 3: 0, 4: 9} {
		if st, err := c.State(ctx, tpl); err != nil || st.Stock != want {
			t.Errorf("template %d: stock %d, %v; want %d", tpl, st.Stock, err, want)
		}
	}
	for b, want := range map[quan.Bucket]int{
		tplB(1):  1000 - 10 - 10 - 10 - 10 - 1, // a, d, f, h, a0 again
		userB(1): 8,
		{Key: "claim:user:300", Rate: 1e-3, Burst: 5}: 0,
		tplB(2):    1000,
		userB(600): 10,
	} {
		if n := tokensLeft(t, c, b); n != want {
			t.Errorf("bucket %s holds %d, want %d", b.Key, n, want)
		}
	}
}

// TestSlowBuckets: a bucket that refills at a rate far below a token a
// year is written with a TTL Redis takes, and refuses with a wait in
// range (the longest Duration at most), not an error or an overflow; by
// ReserveLimited and by Allow, for a bucket made by the call and one read.
func TestSlowBuckets(t *testing.T) {
	for _, rate := range []float64{1e-9, 1e-12, 1e-30} {
		t.Run(strconv.FormatFloat(rate, 'g', -1, 64), func(t *testing.T) {
			c := newTestCache(t)
			loadTemplate(t, c, 1, 10)
			slow := func(u int) []quan.Bucket {
				return []quan.Bucket{{Key: "claim:user:" + strconv.Itoa(u), Rate: rate, Burst: 1}}
			}
			minWait := time.Duration(min(1/rate, 9e6) * 1e9) // 1/rate s, or 104 days when that overflows
			for i, want := range []int{-1, 0} {
				refused, wait, _, err := c.ReserveLimited(t.Context(), 1, "k"+strconv.Itoa(i), []int64{1}, limitedNow, slow(1))
				if err != nil || refused != want || (want == 0 && wait < minWait) {
					t.Errorf("claim %d: refused %d after %v, %v; want refused %d", i, refused, wait, err, want)
				}
			}
			for _, u := range []int{1, 2} { // 2: refused by the bucket just made
				if _, _, err := c.Allow(t.Context(), slow(u)...); err != nil {
					t.Fatal(err)
				}
				if refused, wait, err := c.Allow(t.Context(), slow(u)...); err != nil || refused != 0 || wait < minWait {
					t.Errorf("Allow user %d: refused %d after %v, %v; want 0 after %v or more", u, refused, wait, err, minWait)
				}
			}
		})
	}
}
