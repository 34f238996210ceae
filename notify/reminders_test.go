package notify_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/testrig"
	"github.com/quanhq/quan/notify"
	"github.com/quanhq/quan/sqlite"
	"github.com/quanhq/quan/templates"
)

var remindT0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func userID(id int64) quan.Identity {
	return quan.Identity{Subject: fmt.Sprintf("user:%d", id), Role: quan.RoleUser, UserID: id}
}

// remindFixture is a store and the services over it on one test clock.
type remindFixture struct {
	st        *sqlite.Store
	clock     *testrig.Clock
	templates *templates.Service
	reminders *notify.Reminders
	notices   *notify.Service
}

func newRemindFixture(t *testing.T) *remindFixture {
	t.Helper()
	st := testrig.Store(t)
	clock := testrig.NewClock(remindT0)
	return &remindFixture{
		st: st, clock: clock,
		templates: &templates.Service{Store: st, Now: clock.At()},
		reminders: &notify.Reminders{Store: st, Templates: st, Now: clock.At()},
		notices:   &notify.Service{Store: st, Contacts: st, Now: clock.At()},
	}
}

func (f *remindFixture) template(t *testing.T, in templates.NewTemplate, activate bool) *quan.Template {
	t.Helper()
	tpl, err := f.templates.Create(t.Context(), testrig.Merchant1, in)
	if err != nil {
		t.Fatalf("create template: %v", err)
	}
	if activate {
		if tpl, err = f.templates.Activate(t.Context(), testrig.Merchant1, tpl.ID); err != nil {
			t.Fatalf("activate: %v", err)
		}
	}
	return tpl
}

// issue gives users a coupon of tpl each, claimed now.
func (f *remindFixture) issue(t *testing.T, tpl *quan.Template, users ...int64) {
	t.Helper()
	var cs []*quan.Claim
	for _, u := range users {
		cs = append(cs, &quan.Claim{ID: quan.NewClaimID(tpl.ID, u), TemplateID: tpl.ID, UserID: u, Status: quan.ClaimPending, At: f.clock.Now()})
	}
	got, err := f.st.IssueClaims(t.Context(), cs, f.clock.Now())
	if err != nil {
		t.Fatalf("issue: %v", err)
	}
	for _, c := range got {
		if c.Status != quan.ClaimIssued {
			t.Fatalf("claim %+v not issued", c)
		}
	}
}

func (f *remindFixture) remind(t *testing.T, batch, wantExpiring, wantOpening int) {
	t.Helper()
	e, o, err := f.reminders.Remind(t.Context(), batch)
	if err != nil || e != wantExpiring || o != wantOpening {
		t.Fatalf("Remind at %s = %d expiring, %d opening, %v; want %d, %d", f.clock.Now(), e, o, err, wantExpiring, wantOpening)
	}
}

func (f *remindFixture) contact(t *testing.T, user int64, phone, mail string, lang quan.Lang) {
	t.Helper()
	if _, err := f.notices.SetContact(t.Context(), userID(user), 0, quan.Contact{Phone: phone, Mail: mail, Lang: lang}); err != nil {
		t.Fatalf("set contact of user %d: %v", user, err)
	}
}

func (f *remindFixture) notification(t *testing.T, src string, user int64, ch quan.NotifyType) *quan.Notification {
	t.Helper()
	n, err := f.st.Notification(t.Context(), src, user, ch)
	if err != nil {
		t.Fatalf("notification %s of user %d on %s: %v", src, user, ch, err)
	}
	return n
}

// TestRemindExpiring: every coupon still available remindBefore before
// its end is reminded once on each of the template's channels, the email
// and SMS at the contact on file; none before; each coupon at its own time.
func TestRemindExpiring(t *testing.T) {
	f := newRemindFixture(t)
	in := testrig.DirectSpec(remindT0)
	in.RemindBefore = quan.Duration(24 * time.Hour)
	in.RemindChannels = []quan.NotifyType{quan.NotifyInbox, quan.NotifyPopup, quan.NotifyEmail, quan.NotifySMS}
	tpl := f.template(t, in, true)
	f.contact(t, 1, "13800000001", "li@example.com", quan.LangEN)
	f.issue(t, tpl, 1, 2) // valid until T0 + 48h
	f.clock.Add(time.Hour)
	f.issue(t, tpl, 3) // until T0 + 49h

	f.clock.Set(remindT0.Add(24*time.Hour - time.Second))
	f.remind(t, 1, 0, 0)
	f.clock.Set(remindT0.Add(24 * time.Hour))
	f.remind(t, 1, 2, 0) // in batches of one
	f.remind(t, 1, 0, 0)

	cs, err := f.st.UserCoupons(t.Context(), 1, tpl.ID)
	if err != nil || len(cs) != 1 {
		t.Fatalf("user 1's coupons: %v, %v", cs, err)
	}
	src := fmt.Sprintf("expiring:coupon:%d", cs[0].ID)
	end := remindT0.Add(48 * time.Hour)
	for _, ch := range in.RemindChannels {
		n := f.notification(t, src, 1, ch)
		if n.Kind != quan.MessageExpiring || n.Lang != quan.LangEN || !n.Vars.ValidUntil.Equal(end) || n.Vars.AmountOff != 500 || n.Vars.TemplateName != "立减5元" {
			t.Errorf("%s reminder %+v, want an expiring message in English of 立减5元 until %s", ch, n, end)
		}
	}
	if n := f.notification(t, src, 1, quan.NotifySMS); n.Status != quan.NotificationQueued || n.Address != "+8613800000001" {
		t.Errorf("SMS %+v, want queued to +8613800000001", n)
	}
	if n := f.notification(t, src, 1, quan.NotifyPopup); !n.ExpiresAt.Equal(end) {
		t.Errorf("popup expires %s, want with the coupon at %s", n.ExpiresAt, end)
	}
	cs2, _ := f.st.UserCoupons(t.Context(), 2, tpl.ID)
	src2 := fmt.Sprintf("expiring:coupon:%d", cs2[0].ID)
	if n := f.notification(t, src2, 2, quan.NotifyEmail); n.Status != quan.NotificationFailed || n.Reason != quan.ReasonNoContact {
		t.Errorf("email to a user without contact %+v, want failed no_contact", n)
	}
	// The user sees it in the inbox, rendered.
	notices, _, err := f.notices.Inbox(t.Context(), userID(2), quan.InboxFilter{})
	if err != nil || len(notices) != 1 || notices[0].Kind != quan.MessageExpiring || !strings.Contains(notices[0].Text, "立减5元") {
		t.Fatalf("user 2's inbox: %+v, %v; want the expiry reminder", notices, err)
	}
	// User 3's coupon ends an hour later: reminded an hour later.
	cs3, _ := f.st.UserCoupons(t.Context(), 3, tpl.ID)
	if _, err := f.st.Notification(t.Context(), fmt.Sprintf("expiring:coupon:%d", cs3[0].ID), 3, quan.NotifyInbox); !errors.Is(err, quan.ErrNotFound) {
		t.Errorf("user 3 reminded early: %v", err)
	}
	f.clock.Add(time.Hour)
	f.remind(t, 10, 1, 0)
	f.remind(t, 10, 0, 0)
}

// TestRemindOpening: a user asks to be reminded before the window opens,
// again without effect, can cancel; at issueStart − lead each subscriber
// is reminded once in the inbox, a popup and the template's SMS.
func TestRemindOpening(t *testing.T) {
	f := newRemindFixture(t)
	start := remindT0.Add(48 * time.Hour)
	in := testrig.DirectSpec(start)
	in.RemindChannels = []quan.NotifyType{quan.NotifySMS}
	tpl := f.template(t, in, true)
	if tpl.RemindLead != quan.DefaultRemindLead {
		t.Errorf("remindLead %s, want the default %s", tpl.RemindLead, quan.DefaultRemindLead)
	}
	ctx := t.Context()
	if _, _, err := f.reminders.Subscribe(ctx, testrig.Merchant1, tpl.ID); !errors.Is(err, quan.ErrForbidden) {
		t.Errorf("a merchant subscribing: %v, want forbidden", err)
	}
	v, created, err := f.reminders.Subscribe(ctx, userID(1), tpl.ID)
	if err != nil || !created || !v.RemindAt.Equal(start.Add(-5*time.Minute)) || v.Name != tpl.Name {
		t.Fatalf("Subscribe = %+v, %t, %v", v, created, err)
	}
	f.clock.Add(time.Minute)
	again, created, err := f.reminders.Subscribe(ctx, userID(1), tpl.ID)
	if err != nil || created || !again.CreatedAt.Equal(remindT0) {
		t.Fatalf("Subscribe again = %+v, %t, %v; want the first, not new", again, created, err)
	}
	if _, _, err := f.reminders.Subscribe(ctx, userID(2), tpl.ID); err != nil {
		t.Fatal(err)
	}
	if err := f.reminders.Unsubscribe(ctx, userID(2), tpl.ID); err != nil {
		t.Fatal(err)
	}
	if err := f.reminders.Unsubscribe(ctx, userID(2), tpl.ID); err != nil {
		t.Errorf("cancelling twice: %v", err)
	}
	list, err := f.reminders.Subscriptions(ctx, userID(1))
	if err != nil || len(list) != 1 || list[0].TemplateID != tpl.ID {
		t.Fatalf("Subscriptions = %+v, %v", list, err)
	}
	f.contact(t, 1, "13800000001", "", quan.LangZH)

	f.clock.Set(start.Add(-5*time.Minute - time.Second))
	f.remind(t, 10, 0, 0)
	f.clock.Set(start.Add(-5 * time.Minute))
	f.remind(t, 10, 0, 1)
	f.remind(t, 10, 0, 0)
	src := fmt.Sprintf("opening:template:%d", tpl.ID)
	for _, ch := range []quan.NotifyType{quan.NotifyInbox, quan.NotifyPopup, quan.NotifySMS} {
		if n := f.notification(t, src, 1, ch); n.Kind != quan.MessageOpening || !n.Vars.OpensAt.Equal(start) {
			t.Errorf("%s reminder %+v, want opening at %s", ch, n, start)
		}
	}
	if _, err := f.st.Notification(ctx, src, 1, quan.NotifyEmail); !errors.Is(err, quan.ErrNotFound) {
		t.Errorf("an email the template does not ask for: %v", err)
	}
	if _, err := f.st.Notification(ctx, src, 2, quan.NotifyInbox); !errors.Is(err, quan.ErrNotFound) {
		t.Errorf("user 2 cancelled but was reminded: %v", err)
	}
	popups, err := f.notices.Popups(ctx, userID(1))
	if err != nil || len(popups) != 1 || !strings.Contains(popups[0].Text, "开抢") {
		t.Errorf("user 1's popups: %+v, %v; want the opening reminder", popups, err)
	}
	// Once the window opened, asking is too late; once it closed, too.
	f.clock.Set(start)
	if _, _, err := f.reminders.Subscribe(ctx, userID(3), tpl.ID); quan.ErrorCode(err) != quan.EALREADYOPEN {
		t.Errorf("subscribing to an open template: %v, want %s", err, quan.EALREADYOPEN)
	}
	f.clock.Set(tpl.IssueEnd)
	if _, _, err := f.reminders.Subscribe(ctx, userID(3), tpl.ID); quan.ErrorCode(err) != quan.EENDED {
		t.Errorf("subscribing to a closed template: %v, want %s", err, quan.EENDED)
	}
	draft := f.template(t, testrig.DirectSpec(tpl.IssueEnd.Add(24*time.Hour)), false)
	if _, _, err := f.reminders.Subscribe(ctx, userID(3), draft.ID); !errors.Is(err, quan.ErrNotFound) {
		t.Errorf("subscribing to a draft: %v, want not found", err)
	}
}

// TestTemplateReminderFields: the reminder fields are checked on create,
// each problem naming its field.
func TestTemplateReminderFields(t *testing.T) {
	f := newRemindFixture(t)
	for name, tc := range map[string]struct {
		edit  func(*templates.NewTemplate)
		field string
	}{
		"NegativeRemindBefore":  {func(n *templates.NewTemplate) { n.RemindBefore = -1 }, "remindBefore"},
		"RemindBeforeTooLong":   {func(n *templates.NewTemplate) { n.RemindBefore = quan.Duration(48 * time.Hour) }, "remindBefore"},
		"RemindBeforeSubSecond": {func(n *templates.NewTemplate) { n.RemindBefore = quan.Duration(time.Hour + time.Millisecond) }, "remindBefore"},
		"NoChannels":            {func(n *templates.NewTemplate) { n.RemindBefore = quan.Duration(time.Hour); n.RemindChannels = nil }, "remindChannels"},
		"UnknownChannel":        {func(n *templates.NewTemplate) { n.RemindChannels = []quan.NotifyType{"fax"} }, "remindChannels[0]"},
		"ChannelTwice":          {func(n *templates.NewTemplate) { n.RemindChannels = []quan.NotifyType{"sms", "sms"} }, "remindChannels[1]"},
		"NegativeLead":          {func(n *templates.NewTemplate) { n.RemindLead = -quan.Duration(time.Minute) }, "remindLead"},
		"LeadTooLong":           {func(n *templates.NewTemplate) { n.RemindLead = quan.Duration(8 * 24 * time.Hour) }, "remindLead"},
		"FixedValidityTooShort": {func(n *templates.NewTemplate) {
			n.Validity = quan.Validity{Kind: quan.ValidFixed, Start: remindT0, End: remindT0.Add(time.Hour)}
			n.RemindBefore = quan.Duration(time.Hour)
		}, "remindBefore"},
	} {
		t.Run(name, func(t *testing.T) {
			in := testrig.DirectSpec(remindT0)
			in.RemindChannels = []quan.NotifyType{quan.NotifyInbox}
			tc.edit(&in)
			_, err := f.templates.Create(t.Context(), testrig.Merchant1, in)
			fields := quan.ErrorFields(err)
			if !slices.ContainsFunc(fields, func(fe quan.FieldError) bool { return fe.Field == tc.field }) {
				t.Errorf("Create = %v; want an error naming %s", err, tc.field)
			}
		})
	}
	in := testrig.DirectSpec(remindT0)
	in.RemindBefore, in.RemindChannels, in.RemindLead = quan.Duration(24*time.Hour), []quan.NotifyType{quan.NotifySMS}, quan.Duration(time.Hour)
	tpl, err := f.templates.Create(t.Context(), testrig.Merchant1, in)
	if err != nil || tpl.RemindBefore != in.RemindBefore || !slices.Equal(tpl.RemindChannels, in.RemindChannels) || tpl.RemindLead != in.RemindLead {
		t.Fatalf("Create = %+v, %v", tpl, err)
	}
}

// TestDurationJSON: durations read as Go's text or whole seconds and
// write as the shortest text.
func TestDurationJSON(t *testing.T) {
	for in, want := range map[string]time.Duration{`"24h"`: 24 * time.Hour, `"90m"`: 90 * time.Minute, `3600`: time.Hour, `""`: 0, `"1h30m"`: 90 * time.Minute} {
		var d quan.Duration
		if err := json.Unmarshal([]byte(in), &d); err != nil || time.Duration(d) != want {
			t.Errorf("read %s = %s, %v; want %s", in, time.Duration(d), err, want)
		}
	}
	for _, bad := range []string{`"soon"`, `true`, `1.5`} {
		var d quan.Duration
		if err := json.Unmarshal([]byte(bad), &d); err == nil {
			t.Errorf("read %s = %s, want an error", bad, d)
		}
	}
	for d, want := range map[time.Duration]string{24 * time.Hour: `"24h"`, 5 * time.Minute: `"5m"`, 90 * time.Minute: `"1h30m"`, 90 * time.Second: `"1m30s"`} {
		if b, _ := json.Marshal(quan.Duration(d)); string(b) != want {
			t.Errorf("write %s = %s, want %s", d, b, want)
		}
	}
}
