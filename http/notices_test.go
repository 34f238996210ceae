package http_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/quanhq/quan"
)

func TestContactAPI(t *testing.T) {
	ts := newTestServer(t)
	u := ts.user(t, 7)
	var c quan.Contact
	ts.do(t, "GET", "/api/v1/me/contact", u, nil).decode(t, &c)
	if c.UserID != 7 || c.Phone != "" || c.Lang != quan.LangZH || c.OptOut == nil {
		t.Errorf("contact of a user with none: %+v", c)
	}
	r := ts.do(t, "PUT", "/api/v1/me/contact", u, map[string]any{"phone": "138 1234 5678", "mail": "Li@EXAMPLE.com", "lang": "en", "optOut": []string{"sms"}})
	r.want(t, http.StatusOK, "")
	r.decode(t, &c)
	if c.Phone != "+8613812345678" || c.Mail != "Li@example.com" || c.Lang != quan.LangEN || len(c.OptOut) != 1 {
		t.Errorf("saved contact %+v", c)
	}
	for field, body := range map[string]map[string]any{
		"phone":  {"phone": "12345"},
		"mail":   {"mail": "not a mail"},
		"optOut": {"optOut": []string{"inbox"}},
	} {
		r := ts.do(t, "PUT", "/api/v1/me/contact", u, body)
		r.want(t, http.StatusBadRequest, quan.EINVALID)
		if !r.hasField(field) {
			t.Errorf("PUT %v: the problem does not name %s: %s", body, field, r.Body)
		}
	}
	ts.do(t, "GET", "/api/v1/me/contact", u, nil).decode(t, &c)
	if c.Phone != "+8613812345678" {
		t.Errorf("a refused PUT changed the contact: %+v", c)
	}
	admin := ts.token(t, quan.Identity{Role: quan.RoleAdmin, Subject: "ops"})
	ts.do(t, "PUT", "/api/v1/users/8/contact", admin, map[string]any{"mail": "eight@example.com"}).want(t, http.StatusOK, "")
	ts.do(t, "GET", "/api/v1/users/8/contact", admin, nil).decode(t, &c)
	if c.UserID != 8 || c.Mail != "eight@example.com" {
		t.Errorf("admin read back %+v", c)
	}
	ts.do(t, "PUT", "/api/v1/users/8/contact", u, map[string]any{}).want(t, http.StatusForbidden, quan.EFORBIDDEN)
	ts.do(t, "GET", "/api/v1/me/contact", "", nil).want(t, http.StatusUnauthorized, quan.EUNAUTHORIZED)
}

func TestInboxAndPopupsAPI(t *testing.T) {
	ts := newTestServer(t)
	m := ts.merchant(t, 1001)
	tpl := ts.activeTemplate(t, m, 100, 1)
	ts.distribute(t, m, tpl.ID, "users.csv", []byte("userId\n1\n2\n"), map[string]string{"notify": "inbox,popup"})
	// The distribution recorded one broadcast per in-app channel, the
	// popup shown until the coupons' valid end (72 hours); a reminder of
	// one user's own is recorded here.
	vars := quan.MessageVars{TemplateName: "新人券", AmountOff: 2000, Threshold: 10000, ValidUntil: time.Date(2026, 12, 31, 15, 59, 0, 0, time.UTC)}
	if _, err := ts.store.RecordNotifications(t.Context(), ts.clock(), []*quan.Notification{
		{Source: "expiring:coupon:1", UserID: 1, Channel: quan.NotifyInbox, Kind: quan.MessageExpiring, Vars: vars},
	}); err != nil {
		t.Fatal(err)
	}
	u1, u2, u3 := ts.user(t, 1), ts.user(t, 2), ts.user(t, 3)
	type page struct {
		Items []quan.Notice
		Total int
	}
	var p page
	ts.do(t, "GET", "/api/v1/me/inbox", u1, nil).decode(t, &p)
	if p.Total != 2 || len(p.Items) != 2 || p.Items[0].Kind != quan.MessageExpiring || p.Items[1].Kind != quan.MessageIssued {
		t.Fatalf("user 1's inbox %+v", p)
	}
	if want := "「满100减10」已发放到您的账户：满100减10元，有效期至2026-11-04 16:00。"; p.Items[1].Text != want || p.Items[1].Read {
		t.Errorf("the broadcast reads %q (read %v), want %q", p.Items[1].Text, p.Items[1].Read, want)
	}
	ts.do(t, "GET", "/api/v1/me/inbox", u3, nil).decode(t, &p)
	if p.Total != 0 || p.Items == nil {
		t.Errorf("user 3, who got no coupon, sees %+v", p)
	}
	var count struct{ Unread int }
	ts.do(t, "GET", "/api/v1/me/inbox/unread-count", u1, nil).decode(t, &count)
	if count.Unread != 2 {
		t.Errorf("unread %d, want 2", count.Unread)
	}
	ts.do(t, "GET", "/api/v1/me/inbox", u2, nil).decode(t, &p)
	broadcast := p.Items
	var marked struct{ Marked int }
	ts.do(t, "POST", "/api/v1/me/inbox/read", u1, map[string]any{"ids": []int64{broadcast[0].ID}}).decode(t, &marked)
	if marked.Marked != 1 {
		t.Errorf("marked %d, want 1", marked.Marked)
	}
	ts.do(t, "GET", "/api/v1/me/inbox?unread=true", u1, nil).decode(t, &p)
	if p.Total != 1 || p.Items[0].Kind != quan.MessageExpiring {
		t.Errorf("unread inbox after reading the broadcast %+v", p)
	}
	ts.do(t, "GET", "/api/v1/me/inbox/unread-count", u2, nil).decode(t, &count)
	if count.Unread != 1 {
		t.Errorf("user 2's unread %d: user 1's read mark leaked", count.Unread)
	}
	ts.do(t, "POST", "/api/v1/me/inbox/read", u1, map[string]any{"all": true}).decode(t, &marked)
	ts.do(t, "GET", "/api/v1/me/inbox/unread-count", u1, nil).decode(t, &count)
	if marked.Marked != 1 || count.Unread != 0 {
		t.Errorf("read all marked %d, unread %d", marked.Marked, count.Unread)
	}
	ts.do(t, "POST", "/api/v1/me/inbox/read", u1, map[string]any{}).want(t, http.StatusBadRequest, quan.EINVALID)
	ts.do(t, "GET", "/api/v1/me/inbox?unread=maybe", u1, nil).want(t, http.StatusBadRequest, quan.EINVALID)
	ts.do(t, "GET", "/api/v1/me/inbox", m, nil).want(t, http.StatusForbidden, quan.EFORBIDDEN)

	var pops struct{ Items []quan.Notice }
	ts.do(t, "GET", "/api/v1/me/popups", u1, nil).decode(t, &pops)
	if len(pops.Items) != 1 || pops.Items[0].Channel != quan.NotifyPopup || pops.Items[0].Subject != "恭喜获得优惠券" {
		t.Fatalf("popups %+v", pops)
	}
	id := pops.Items[0].ID
	ts.do(t, "GET", "/api/v1/me/popups", u1, nil).decode(t, &pops)
	if len(pops.Items) != 1 {
		t.Errorf("reading popups marked them shown")
	}
	ts.do(t, "POST", fmt.Sprintf("/api/v1/me/popups/%d/ack", id), u1, nil).want(t, http.StatusNoContent, "")
	ts.do(t, "GET", "/api/v1/me/popups", u1, nil).decode(t, &pops)
	if len(pops.Items) != 0 {
		t.Errorf("an acked popup came back: %+v", pops)
	}
	ts.do(t, "POST", fmt.Sprintf("/api/v1/me/popups/%d/ack", id), u3, nil).want(t, http.StatusNotFound, quan.ENOTFOUND)
	// User 2 opts out of popups: none shown, though not acked.
	ts.do(t, "PUT", "/api/v1/me/contact", u2, map[string]any{"optOut": []string{"popup"}}).want(t, http.StatusOK, "")
	ts.do(t, "GET", "/api/v1/me/popups", u2, nil).decode(t, &pops)
	if len(pops.Items) != 0 {
		t.Errorf("popups shown to a user who opted out: %+v", pops)
	}
	// Past its window, the coupons' valid end, an unshown popup is gone.
	ts.do(t, "PUT", "/api/v1/me/contact", u2, map[string]any{}).want(t, http.StatusOK, "")
	ts.do(t, "GET", "/api/v1/me/popups", u2, nil).decode(t, &pops)
	if len(pops.Items) != 1 {
		t.Errorf("user 2's popups before the window ends: %+v", pops)
	}
	ts.setNow(ts.clock().Add(72 * time.Hour))
	r := ts.do(t, "GET", "/api/v1/me/popups", ts.user(t, 2), nil) // a token of the new time
	r.want(t, http.StatusOK, "")
	pops.Items = nil
	r.decode(t, &pops)
	if len(pops.Items) != 0 {
		t.Errorf("an expired popup is shown: %+v", pops)
	}
}
