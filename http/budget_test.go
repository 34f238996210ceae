package http_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/quanhq/quan"
)

// TestClaimPeriodLimits claims across midnight and the week's start in
// Asia/Shanghai with the server's clock: 23:59 and 00:01 fall on two days
// (and here two weeks: testNow is a Sunday).
func TestClaimPeriodLimits(t *testing.T) {
	ts := newClaimServer(t, nil)
	m := ts.merchant(t, 1)
	body := validTemplate()
	body["perUserLimit"], body["perUserDaily"], body["perUserWeekly"] = 5, 1, 2
	tpl := ts.create(t, m, body)
	if tpl.PerUserDaily != 1 || tpl.PerUserWeekly != 2 {
		t.Fatalf("created %+v, want the period limits", tpl.TemplateSpec)
	}
	ts.do(t, "POST", loc(tpl.ID)+"/activate", m, nil).want(t, 200, "")
	monday := quan.ShanghaiDayStart(quan.ShanghaiDay(testNow) + 1)
	if quan.ShanghaiWeekStart(quan.ShanghaiWeek(monday)) != monday {
		t.Fatalf("%s is not the start of a Shanghai week", monday)
	}
	var u string // user 1's token, minted at each time (tokens expire)
	at := func(d time.Duration) {
		ts.setNow(monday.Add(d))
		u = ts.user(t, 1)
	}
	defer ts.setNow(testNow)

	at(-time.Minute) // Sunday 23:59
	ts.claimed(t, u, tpl.ID)
	ts.claim(t, u, tpl.ID).want(t, http.StatusConflict, quan.EDAILYLIMIT)
	at(time.Minute) // Monday 00:01: another day, another week
	ts.claimed(t, u, tpl.ID)
	ts.claim(t, u, tpl.ID).want(t, http.StatusConflict, quan.EDAILYLIMIT)
	at(24*time.Hour + time.Minute) // Tuesday
	ts.claimed(t, u, tpl.ID)
	at(48*time.Hour + time.Minute) // Wednesday: two this week
	ts.claim(t, u, tpl.ID).want(t, http.StatusConflict, quan.EWEEKLYLIMIT)
	ts.claimed(t, ts.user(t, 2), tpl.ID) // others are not held back
}

func TestTemplatePeriodLimitsValidated(t *testing.T) {
	ts := newTestServer(t)
	m := ts.merchant(t, 1)
	body := validTemplate()
	body["perUserLimit"], body["perUserDaily"], body["perUserWeekly"], body["budget"] = 2, 3, 1, -1
	r := ts.do(t, "POST", "/api/v1/templates", m, body)
	r.want(t, http.StatusBadRequest, quan.EINVALID)
	for _, f := range []string{"perUserDaily", "budget"} {
		if !r.hasField(f) {
			t.Errorf("no error on %s: %s", f, r.Body)
		}
	}
}
