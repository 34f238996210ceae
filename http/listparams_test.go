package http_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/quanhq/quan"
)

// TestListParameters: every list route paged by offset (the claim centre
// pages by cursor: TestClaimCentrePages) reads offset and limit the same
// way: a limit that is not a whole number from 1 to 100, an offset that
// is not one from 0 on, or either given twice, is 400 naming the
// parameter, never clamped or ignored; good ones page as asked.
func TestListParameters(t *testing.T) {
	ts := newTestServer(t)
	m := ts.merchant(t, 1)
	u := ts.user(t, 5)
	routes := []struct{ path, token string }{
		{"/api/v1/templates", m},
		{"/api/v1/tasks", m},
		{"/api/v1/me/coupons", u},
		{"/api/v1/me/inbox", u},
	}
	bad := []struct{ query, param string }{
		{"limit=abc", "limit"},
		{"limit=-1", "limit"},
		{"limit=0", "limit"},
		{"limit=101", "limit"},
		{"limit=1000", "limit"},
		{"limit=1.5", "limit"},
		{"limit=%20", "limit"},
		{"limit=5&limit=6", "limit"},
		{"offset=abc", "offset"},
		{"offset=-1", "offset"},
		{"offset=-3", "offset"},
		{"offset=99999999999999999999", "offset"},
		{"offset=9223372036854775807", "offset"},
		{"offset=0&offset=1", "offset"},
	}
	for _, rt := range routes {
		for _, b := range bad {
			t.Run(rt.path+"?"+b.query, func(t *testing.T) {
				r := ts.do(t, "GET", rt.path+"?"+b.query, rt.token, nil)
				r.want(t, http.StatusBadRequest, quan.EINVALID)
				if !r.hasField(b.param) {
					t.Fatalf("errors %+v do not name %s", r.Problem.Errors, b.param)
				}
			})
		}
		for _, good := range []struct {
			query         string
			offset, limit int
		}{{"", 0, quan.DefaultPageSize}, {"limit=1", 0, 1}, {"limit=100&offset=0", 0, 100}, {"offset=7&limit=3", 7, 3}} {
			t.Run(rt.path+"?"+good.query, func(t *testing.T) {
				r := ts.do(t, "GET", rt.path+"?"+good.query, rt.token, nil)
				r.want(t, http.StatusOK, "")
				var page struct{ Offset, Limit int }
				r.decode(t, &page)
				// The wallet answers the count of the page it gives.
				if page.Offset != good.offset || (rt.path != "/api/v1/me/coupons" && page.Limit != good.limit) {
					t.Fatalf("page at %d of %d, want %d of %d", page.Offset, page.Limit, good.offset, good.limit)
				}
			})
		}
	}
	t.Run("InboxUnread", func(t *testing.T) {
		r := ts.do(t, "GET", "/api/v1/me/inbox?unread=maybe", u, nil)
		r.want(t, http.StatusBadRequest, quan.EINVALID)
		if !r.hasField("unread") {
			t.Fatalf("errors %+v do not name unread", r.Problem.Errors)
		}
	})
}

// TestStatsRangeParameters: both statistics routes refuse, naming the
// parameter, a from or to that is not an RFC 3339 time, is out of range
// (year 0000, year 10000 in UTC), is the zero time (which would be taken
// as not given), is given twice, or makes a range backwards or longer
// than 31 days; a good range is answered as asked.
func TestStatsRangeParameters(t *testing.T) {
	ts := newTestServer(t)
	m := ts.merchant(t, 1)
	tpl := ts.create(t, m, validTemplate())
	at := func(d time.Duration) string { return testNow.Add(d).Format(time.RFC3339) }
	bad := []struct{ query, param string }{
		{"from=yesterday", "from"},
		{"from=2026-11-01", "from"},
		{"from=0000-01-01T00:00:00Z", "from"},
		{"from=0001-01-01T00:00:00Z", "from"},
		{"from=0001-01-01T00:00:00Z&to=" + at(0), "from"},
		{"to=0001-01-01T00:00:00Z", "to"},
		{"to=9999-12-31T23:00:00-08:00", "to"},
		{"from=" + at(-time.Hour) + "&from=" + at(-2*time.Hour), "from"},
		{"from=" + at(0) + "&to=" + at(-time.Hour), "from"},
		{"from=" + at(-32*24*time.Hour) + "&to=" + at(0), "to"},
	}
	for _, path := range []string{"/api/v1/stats", fmt.Sprintf("/api/v1/templates/%d/stats", tpl.ID)} {
		for _, b := range bad {
			t.Run(path+"?"+b.query, func(t *testing.T) {
				r := ts.do(t, "GET", path+"?"+b.query, m, nil)
				r.want(t, http.StatusBadRequest, quan.EINVALID)
				if !r.hasField(b.param) {
					t.Fatalf("errors %+v do not name %s", r.Problem.Errors, b.param)
				}
			})
		}
		t.Run(path+"/Good", func(t *testing.T) {
			r := ts.do(t, "GET", path+"?from="+at(-3*time.Hour)+"&to="+at(0), m, nil)
			r.want(t, http.StatusOK, "")
			var st struct{ From, To time.Time }
			r.decode(t, &st)
			if !st.From.Equal(testNow.Add(-3*time.Hour)) || !st.To.Equal(testNow) {
				t.Fatalf("range %s … %s", st.From, st.To)
			}
		})
	}
	t.Run("ShopNo", func(t *testing.T) {
		admin := ts.token(t, quan.Identity{Role: quan.RoleAdmin})
		for _, q := range []string{"shopNo=abc", "shopNo=0", "shopNo=-1", "shopNo=1&shopNo=2"} {
			r := ts.do(t, "GET", "/api/v1/stats?"+q, admin, nil)
			r.want(t, http.StatusBadRequest, quan.EINVALID)
			if !r.hasField("shopNo") {
				t.Fatalf("%s: errors %+v do not name shopNo", q, r.Problem.Errors)
			}
		}
	})
}
