package http_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/quanhq/quan"
)

// TestTemplateReminderFieldsAPI: remindBefore, remindChannels and
// remindLead are created, read and edited as durations and channel
// lists, and a wrong one is a 400 naming it.
func TestTemplateReminderFieldsAPI(t *testing.T) {
	ts := newTestServer(t)
	m := ts.merchant(t, 1001)
	body := validTemplate()
	body["remindBefore"], body["remindChannels"] = "24h", []string{"inbox", "sms"}
	r := ts.do(t, "POST", "/api/v1/templates", m, body)
	r.want(t, http.StatusCreated, "")
	var got map[string]any
	r.decode(t, &got)
	if got["remindBefore"] != "24h" || got["remindLead"] != "5m" || fmt.Sprint(got["remindChannels"]) != "[inbox sms]" {
		t.Errorf("created %v %v %v, want 24h, [inbox sms] and the default lead 5m", got["remindBefore"], got["remindChannels"], got["remindLead"])
	}
	id := int64(got["id"].(float64))
	r = ts.do(t, "PATCH", loc(id), m, map[string]any{"remindLead": "10m"})
	r.want(t, http.StatusOK, "")
	r.decode(t, &got)
	if got["remindLead"] != "10m" || got["remindBefore"] != "24h" {
		t.Errorf("edited %v %v, want the lead 10m and the rest kept", got["remindLead"], got["remindBefore"])
	}
	for name, tc := range map[string]struct {
		fields map[string]any
		field  string
	}{
		"NegativeRemindBefore": {map[string]any{"remindBefore": "-1h", "remindChannels": []string{"inbox"}}, "remindBefore"},
		"LongerThanValidity":   {map[string]any{"remindBefore": "72h", "remindChannels": []string{"inbox"}}, "remindBefore"},
		"NoChannel":            {map[string]any{"remindBefore": "1h"}, "remindChannels"},
		"UnknownChannel":       {map[string]any{"remindChannels": []string{"fax"}}, "remindChannels[0]"},
		"LeadTooLong":          {map[string]any{"remindLead": "200h"}, "remindLead"},
	} {
		t.Run(name, func(t *testing.T) {
			body := validTemplate()
			for k, v := range tc.fields {
				body[k] = v
			}
			r := ts.do(t, "POST", "/api/v1/templates", m, body)
			r.want(t, http.StatusBadRequest, quan.EINVALID)
			if !r.hasField(tc.field) {
				t.Errorf("the problem does not name %s: %s", tc.field, r.Body)
			}
		})
	}
	body = validTemplate()
	body["remindBefore"] = "soon"
	ts.do(t, "POST", "/api/v1/templates", m, body).want(t, http.StatusBadRequest, quan.EINVALID)
}

// TestRemindersAPI: a user asks to be reminded of a template before it
// opens, lists and cancels the request; at issueStart − remindLead the
// reminder is in the inbox.
func TestRemindersAPI(t *testing.T) {
	ts := newTestServer(t)
	m := ts.merchant(t, 1001)
	body := validTemplate()
	start := testNow.Add(2 * time.Hour)
	body["issueStart"] = start.Format(time.RFC3339)
	tpl := ts.create(t, m, body)
	path := loc(tpl.ID) + "/reminders"
	u1, u2 := ts.user(t, 1), ts.user(t, 2)
	ts.do(t, "POST", path, u1, nil).want(t, http.StatusNotFound, quan.ENOTFOUND) // a draft
	ts.do(t, "POST", loc(tpl.ID)+"/activate", m, nil).want(t, http.StatusOK, "")

	var sub struct {
		TemplateID int64     `json:"templateId"`
		Name       string    `json:"name"`
		IssueStart time.Time `json:"issueStart"`
		RemindAt   time.Time `json:"remindAt"`
		CreatedAt  time.Time `json:"createdAt"`
	}
	r := ts.do(t, "POST", path, u1, nil)
	r.want(t, http.StatusCreated, "")
	r.decode(t, &sub)
	if sub.TemplateID != tpl.ID || sub.Name != tpl.Name || !sub.IssueStart.Equal(start) || !sub.RemindAt.Equal(start.Add(-5*time.Minute)) {
		t.Errorf("subscription %+v, want template %d reminded 5 minutes before %s", sub, tpl.ID, start)
	}
	ts.do(t, "POST", path, u1, nil).want(t, http.StatusOK, "")
	ts.do(t, "POST", path, u2, nil).want(t, http.StatusCreated, "")
	ts.do(t, "POST", path, m, nil).want(t, http.StatusForbidden, quan.EFORBIDDEN)
	ts.do(t, "POST", path, "", nil).want(t, http.StatusUnauthorized, quan.EUNAUTHORIZED)
	ts.do(t, "POST", loc(tpl.ID+100)+"/reminders", u1, nil).want(t, http.StatusNotFound, quan.ENOTFOUND)
	open := ts.activeTemplate(t, m, 10, 1) // its window opened an hour ago
	ts.do(t, "POST", loc(open.ID)+"/reminders", u1, nil).want(t, http.StatusConflict, quan.EALREADYOPEN)

	var list struct {
		Items []map[string]any `json:"items"`
	}
	ts.do(t, "GET", "/api/v1/me/reminders", u1, nil).decode(t, &list)
	if len(list.Items) != 1 || list.Items[0]["templateId"] != float64(tpl.ID) || list.Items[0]["remindAt"] == nil {
		t.Errorf("user 1's reminders %+v, want the one", list.Items)
	}
	ts.do(t, "DELETE", path, u2, nil).want(t, http.StatusNoContent, "")
	ts.do(t, "DELETE", path, u2, nil).want(t, http.StatusNoContent, "")
	ts.do(t, "GET", "/api/v1/me/reminders", u2, nil).decode(t, &list)
	if list.Items == nil || len(list.Items) != 0 {
		t.Errorf("user 2's reminders after cancelling %+v, want []", list.Items)
	}
	ts.do(t, "GET", "/api/v1/me/reminders", m, nil).want(t, http.StatusForbidden, quan.EFORBIDDEN)

	// The sweep at issueStart − 5 minutes puts the reminder in user 1's
	// inbox, and nothing in user 2's.
	ts.setNow(start.Add(-5 * time.Minute))
	if _, n, err := ts.api.Reminders.Remind(t.Context(), 100); err != nil || n != 1 {
		t.Fatalf("Remind = %d, %v; want 1 opening reminder", n, err)
	}
	u1, u2 = ts.user(t, 1), ts.user(t, 2) // tokens of the new time
	var inbox struct {
		Items []quan.Notice
		Total int
	}
	ts.do(t, "GET", "/api/v1/me/inbox", u1, nil).decode(t, &inbox)
	if inbox.Total != 1 || inbox.Items[0].Kind != quan.MessageOpening || inbox.Items[0].Subject != "您预约的优惠券即将开抢" {
		t.Errorf("user 1's inbox %+v, want the opening reminder", inbox)
	}
	ts.do(t, "GET", "/api/v1/me/inbox", u2, nil).decode(t, &inbox)
	if inbox.Total != 0 {
		t.Errorf("user 2 cancelled, yet sees %+v", inbox)
	}
	ts.do(t, "GET", "/api/v1/me/reminders", u1, nil).decode(t, &list)
	if len(list.Items) != 1 || list.Items[0]["notifiedAt"] == nil {
		t.Errorf("user 1's reminders after the sweep %+v, want it notified", list.Items)
	}
}
