package quantest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/quanhq/quan"
)

// RemindStores are the ports of one store that reminders use.
type RemindStores struct {
	NotifyStores
	Wallet    quan.WalletStore
	Reminders quan.ReminderStore
}

// TestReminderStore runs the conformance suite of quan.ReminderStore.
// newStores returns the ports of a fresh, empty store for each subtest.
func TestReminderStore(t *testing.T, newStores func(t *testing.T) RemindStores) {
	t.Helper()
	run := func(name string, test func(*testing.T, RemindStores)) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, newStores(t))
		})
	}
	run("Expiring/EachCouponOnceInBatches", testRemindExpiringOnce)
	run("Expiring/NotBeforeDueNorAfterTheEnd", testRemindExpiringDue)
	run("Expiring/OnlyAvailableCoupons", testRemindExpiringAvailable)
	run("Expiring/OnlyTemplatesThatRemind", testRemindExpiringTemplates)
	run("Expiring/FnErrorWritesNothing", testRemindFnError)
	run("Opening/EachSubscriberOnceInBatches", testRemindOpeningOnce)
	run("Opening/OnlyActiveTemplatesInTheirWindow", testRemindOpeningWindow)
	run("Subscriptions", testSubscriptions)
}

// remindBefore is the expiry reminders' lead of remindingTemplate.
const remindBefore = 24 * time.Hour

// remindingTemplate stores an active template of stock 1000 reminding
// remindBefore before its coupons end, which is base + 20 days (fixed).
func remindingTemplate(t *testing.T, s RemindStores, name string, before time.Duration) *quan.Template {
	t.Helper()
	tpl := newTemplate(t, 1, name)
	tpl.Status = quan.TemplateActive
	tpl.Stock, tpl.TotalStock = 1000, 1000
	tpl.RemindBefore = quan.Duration(before)
	if before > 0 {
		tpl.RemindChannels = []quan.NotifyType{quan.NotifyInbox, quan.NotifySMS}
	}
	mustValid(t, tpl)
	return create(t, s.Templates, tpl)
}

// issueTo gives users one coupon each of tpl through a task and returns
// the coupons' ids by user.
func issueTo(t *testing.T, s RemindStores, tpl *quan.Template, users ...int64) map[int64]int64 {
	t.Helper()
	task := runningTask(t, s.TaskStores, tpl, "remind")
	rows := make([]quan.ChunkRow, len(users))
	for i, u := range users {
		rows[i] = user(int64(i+2), u)
	}
	apply(t, s.TaskStores, chunk(task, 1, rows...), issued(int64(len(users))))
	out := map[int64]int64{}
	for _, u := range users {
		cs := coupons(t, s.TaskStores, u, tpl.ID)
		if len(cs) != 1 {
			t.Fatalf("user %d holds %d coupons of template %d, want 1", u, len(cs), tpl.ID)
		}
		out[u] = cs[0].ID
	}
	return out
}

// users returns the ids from and including a to b.
func userRange(a, b int64) []int64 {
	var out []int64
	for u := a; u <= b; u++ {
		out = append(out, u)
	}
	return out
}

// remindCall is what a RemindFunc was called with.
type remindCall struct {
	template int64
	due      []quan.DueReminder
}

// recorder is a RemindFunc that records what it is called with and owes
// an inbox entry for each reminder, and an SMS to its phone on file
// (failed no_contact without one).
type recorder struct {
	kind  quan.MessageKind
	calls []remindCall
}

func (r *recorder) fn(t *quan.Template, due []quan.DueReminder) ([]*quan.Notification, error) {
	r.calls = append(r.calls, remindCall{t.ID, slices.Clone(due)})
	var ns []*quan.Notification
	for _, d := range due {
		src := fmt.Sprintf("opening:template:%d", t.ID)
		if r.kind == quan.MessageExpiring {
			src = fmt.Sprintf("expiring:coupon:%d", d.CouponID)
		}
		ns = append(ns, &quan.Notification{Source: src, UserID: d.UserID, Channel: quan.NotifyInbox, Kind: r.kind})
		sms := &quan.Notification{Source: src, UserID: d.UserID, Channel: quan.NotifySMS, Kind: r.kind, Address: d.Contact.Phone}
		if sms.Address == "" {
			sms.Status, sms.Reason = quan.NotificationFailed, quan.ReasonNoContact
		}
		ns = append(ns, sms)
	}
	return ns, nil
}

// taken returns the reminders of every call, in order.
func (r *recorder) taken() []quan.DueReminder {
	var out []quan.DueReminder
	for _, c := range r.calls {
		out = append(out, c.due...)
	}
	return out
}

func remindExpiring(t *testing.T, s RemindStores, r *recorder, now time.Time, limit, want int) {
	t.Helper()
	got, err := s.Reminders.RemindExpiring(t.Context(), now, limit, r.fn)
	if err != nil || got != want {
		t.Fatalf("RemindExpiring(%s, %d) = %d, %v; want %d", now, limit, got, err, want)
	}
}

func remindOpening(t *testing.T, s RemindStores, r *recorder, now time.Time, limit, want int) {
	t.Helper()
	got, err := s.Reminders.RemindOpening(t.Context(), now, limit, r.fn)
	if err != nil || got != want {
		t.Fatalf("RemindOpening(%s, %d) = %d, %v; want %d", now, limit, got, err, want)
	}
}

func setPhone(t *testing.T, s RemindStores, user int64, phone string) {
	t.Helper()
	if _, err := s.Contacts.UpdateContact(t.Context(), user, notifyNow, func(c *quan.Contact) error {
		c.Phone, c.Lang = phone, quan.LangEN
		return nil
	}); err != nil {
		t.Fatalf("UpdateContact(%d): %v", user, err)
	}
}

func testRemindExpiringOnce(t *testing.T, s RemindStores) {
	tpl := remindingTemplate(t, s, "expiring", remindBefore)
	ids := issueTo(t, s, tpl, userRange(1, 25)...)
	setPhone(t, s, 3, "+8613800000003")
	due := tpl.Validity.End.Add(-remindBefore)
	r := &recorder{kind: quan.MessageExpiring}
	for _, want := range []int{10, 10, 5, 0} {
		remindExpiring(t, s, r, due, 10, want)
	}
	// Later sweeps find nothing more.
	remindExpiring(t, s, r, due.Add(time.Hour), 10, 0)
	seen := map[int64]int{}
	for _, d := range r.taken() {
		seen[d.CouponID]++
		if ids[d.UserID] != d.CouponID || !d.ValidEnd.Equal(tpl.Validity.End) {
			t.Errorf("reminder %+v: want coupon %d of user %d, ending %s", d, ids[d.UserID], d.UserID, tpl.Validity.End)
		}
		if d.UserID == 3 && (d.Contact.Phone != "+8613800000003" || d.Contact.Lang != quan.LangEN) {
			t.Errorf("user 3's contact %+v, want the phone and language on file", d.Contact)
		}
	}
	for u, id := range ids {
		if seen[id] != 1 {
			t.Errorf("coupon %d of user %d reminded %d times, want once", id, u, seen[id])
		}
	}
	for _, c := range r.calls {
		if c.template != tpl.ID {
			t.Errorf("fn called with template %d, want %d", c.template, tpl.ID)
		}
	}
	// The notifications fn returned are recorded.
	src := fmt.Sprintf("expiring:coupon:%d", ids[3])
	if n := lookup(t, s.NotifyStores, src, 3, quan.NotifySMS); n.Status != quan.NotificationQueued || n.Address != "+8613800000003" {
		t.Errorf("user 3's SMS %+v, want queued to the phone on file", n)
	}
	if n := lookup(t, s.NotifyStores, fmt.Sprintf("expiring:coupon:%d", ids[4]), 4, quan.NotifySMS); n.Status != quan.NotificationFailed || n.Reason != quan.ReasonNoContact {
		t.Errorf("user 4's SMS %+v, want failed no_contact", n)
	}
	if n := lookup(t, s.NotifyStores, src, 3, quan.NotifyInbox); n.Status != quan.NotificationSent {
		t.Errorf("user 3's inbox entry %+v, want sent", n)
	}
}

func testRemindExpiringDue(t *testing.T, s RemindStores) {
	tpl := remindingTemplate(t, s, "due", remindBefore)
	issueTo(t, s, tpl, 1, 2)
	end := tpl.Validity.End
	r := &recorder{kind: quan.MessageExpiring}
	remindExpiring(t, s, r, end.Add(-remindBefore).Add(-time.Microsecond), 10, 0)
	// Past the end the coupons are (to be) expired: no reminder.
	remindExpiring(t, s, r, end, 10, 0)
	remindExpiring(t, s, r, end.Add(-time.Hour), 10, 2)
}

func testRemindExpiringAvailable(t *testing.T, s RemindStores) {
	tpl := remindingTemplate(t, s, "available", remindBefore)
	ids := issueTo(t, s, tpl, 1, 2, 3)
	due := tpl.Validity.End.Add(-remindBefore)
	lock := func(user int64, until time.Time) {
		t.Helper()
		if _, err := s.Wallet.UpdateCoupons(t.Context(), user, []int64{ids[user]}, func(cs []*quan.Coupon) error {
			return cs[0].Lock(fmt.Sprintf("order-%d", user), due.Add(-time.Minute), until)
		}); err != nil {
			t.Fatalf("lock the coupon of user %d: %v", user, err)
		}
	}
	lock(1, due.Add(time.Hour))
	r := &recorder{kind: quan.MessageExpiring}
	remindExpiring(t, s, r, due, 10, 2)
	if got := r.taken(); slices.ContainsFunc(got, func(d quan.DueReminder) bool { return d.UserID == 1 }) {
		t.Errorf("the locked coupon of user 1 was reminded: %+v", got)
	}
	// Released, it is available again before its end, and reminded then.
	if _, err := s.Wallet.UpdateCoupons(t.Context(), 1, []int64{ids[1]}, func(cs []*quan.Coupon) error {
		cs[0].Release(due.Add(time.Minute))
		return nil
	}); err != nil {
		t.Fatalf("release: %v", err)
	}
	remindExpiring(t, s, r, due.Add(2*time.Minute), 10, 1)
	if got := r.taken(); got[len(got)-1].CouponID != ids[1] {
		t.Errorf("last reminder %+v, want user 1's coupon %d", got[len(got)-1], ids[1])
	}
}

func testRemindExpiringTemplates(t *testing.T, s RemindStores) {
	quiet := remindingTemplate(t, s, "quiet", 0)
	short := remindingTemplate(t, s, "short", time.Hour)
	long := remindingTemplate(t, s, "long", remindBefore)
	issueTo(t, s, quiet, 1, 2)
	issueTo(t, s, short, 1, 2)
	longIDs := issueTo(t, s, long, 1, 2)
	r := &recorder{kind: quan.MessageExpiring}
	// A day before the end only long's coupons are due; an hour before,
	// short's; quiet's never.
	remindExpiring(t, s, r, long.Validity.End.Add(-remindBefore), 10, 2)
	for _, d := range r.taken() {
		if d.CouponID != longIDs[d.UserID] {
			t.Errorf("reminded %+v a day before the end, want only template %d's coupons", d, long.ID)
		}
	}
	remindExpiring(t, s, r, short.Validity.End.Add(-time.Hour), 10, 2)
	remindExpiring(t, s, r, short.Validity.End.Add(-time.Minute), 10, 0)
	for _, c := range r.calls {
		if c.template == quiet.ID {
			t.Errorf("template %d reminds nobody, but fn got %+v", quiet.ID, c.due)
		}
	}
}

func testRemindFnError(t *testing.T, s RemindStores) {
	tpl := remindingTemplate(t, s, "fails", remindBefore)
	ids := issueTo(t, s, tpl, 1, 2)
	due := tpl.Validity.End.Add(-remindBefore)
	boom := errors.New("boom")
	_, err := s.Reminders.RemindExpiring(t.Context(), due, 10, func(t *quan.Template, ds []quan.DueReminder) ([]*quan.Notification, error) {
		return nil, boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("RemindExpiring with a failing fn: %v, want it", err)
	}
	// And a notification that cannot be recorded writes nothing either.
	_, err = s.Reminders.RemindExpiring(t.Context(), due, 10, func(t *quan.Template, ds []quan.DueReminder) ([]*quan.Notification, error) {
		return []*quan.Notification{{Source: "bad source!", UserID: 1, Channel: quan.NotifyInbox, Kind: quan.MessageExpiring}}, nil
	})
	if !errors.Is(err, quan.ErrInvalid) {
		t.Fatalf("RemindExpiring with an invalid notification: %v, want EINVALID", err)
	}
	r := &recorder{kind: quan.MessageExpiring}
	remindExpiring(t, s, r, due, 10, 2)
	if _, err := s.Notify.Notification(t.Context(), fmt.Sprintf("expiring:coupon:%d", ids[1]), 1, quan.NotifyInbox); err != nil {
		t.Errorf("the reminder after the failures: %v", err)
	}
}

// openingTemplate stores a template of status opening for claims at base
// + 10 days with the given lead (0: the default).
func openingTemplate(t *testing.T, s RemindStores, name string, status quan.TemplateStatus, lead time.Duration) *quan.Template {
	t.Helper()
	tpl := newTemplate(t, 1, name)
	tpl.Status = status
	tpl.IssueStart = base.Add(10 * 24 * time.Hour)
	tpl.RemindLead = quan.Duration(lead)
	mustValid(t, tpl)
	return create(t, s.Templates, tpl)
}

func subscribe(t *testing.T, s RemindStores, template, user int64, at time.Time, wantNew bool) *quan.Subscription {
	t.Helper()
	sub := &quan.Subscription{TemplateID: template, UserID: user, CreatedAt: at}
	created, err := s.Reminders.Subscribe(t.Context(), sub)
	if err != nil || created != wantNew {
		t.Fatalf("Subscribe(%d, %d) = %t, %v; want %t", template, user, created, err, wantNew)
	}
	return sub
}

func testRemindOpeningOnce(t *testing.T, s RemindStores) {
	tpl := openingTemplate(t, s, "opening", quan.TemplateActive, 10*time.Minute)
	for _, u := range userRange(1, 25) {
		subscribe(t, s, tpl.ID, u, base, true)
	}
	setPhone(t, s, 7, "+8613800000007")
	remindAt := tpl.IssueStart.Add(-10 * time.Minute)
	r := &recorder{kind: quan.MessageOpening}
	remindOpening(t, s, r, remindAt.Add(-time.Microsecond), 10, 0)
	for _, want := range []int{10, 10, 5, 0} {
		remindOpening(t, s, r, remindAt, 10, want)
	}
	remindOpening(t, s, r, tpl.IssueStart.Add(time.Hour), 10, 0)
	seen := map[int64]int{}
	for _, d := range r.taken() {
		seen[d.UserID]++
		if d.CouponID != 0 {
			t.Errorf("opening reminder %+v names a coupon", d)
		}
		if d.UserID == 7 && d.Contact.Phone != "+8613800000007" {
			t.Errorf("user 7's contact %+v, want the phone on file", d.Contact)
		}
	}
	for _, u := range userRange(1, 25) {
		if seen[u] != 1 {
			t.Errorf("user %d reminded %d times, want once", u, seen[u])
		}
	}
	src := fmt.Sprintf("opening:template:%d", tpl.ID)
	if n := lookup(t, s.NotifyStores, src, 7, quan.NotifySMS); n.Status != quan.NotificationQueued {
		t.Errorf("user 7's SMS %+v, want queued", n)
	}
	// Subscribing again after the reminder changes nothing and says when
	// it was sent.
	again := subscribe(t, s, tpl.ID, 7, remindAt.Add(time.Second), false)
	if !again.CreatedAt.Equal(base) || !again.NotifiedAt.Equal(remindAt) {
		t.Errorf("subscribed again: %+v, want the first subscription, notified at %s", again, remindAt)
	}
	remindOpening(t, s, r, remindAt.Add(time.Minute), 10, 0)
}

func testRemindOpeningWindow(t *testing.T, s RemindStores) {
	active := openingTemplate(t, s, "active", quan.TemplateActive, 0)
	paused := openingTemplate(t, s, "paused", quan.TemplatePaused, 0)
	ended := openingTemplate(t, s, "ended", quan.TemplateEnded, 0)
	for _, tpl := range []*quan.Template{active, paused, ended} {
		subscribe(t, s, tpl.ID, 1, base, true)
		subscribe(t, s, tpl.ID, 2, base, true)
	}
	if ok, err := s.Reminders.Unsubscribe(t.Context(), active.ID, 2); err != nil || !ok {
		t.Fatalf("Unsubscribe = %t, %v; want true", ok, err)
	}
	if ok, err := s.Reminders.Unsubscribe(t.Context(), active.ID, 2); err != nil || ok {
		t.Fatalf("Unsubscribe again = %t, %v; want false", ok, err)
	}
	r := &recorder{kind: quan.MessageOpening}
	// The default lead is five minutes.
	remindOpening(t, s, r, active.IssueStart.Add(-5*time.Minute-time.Microsecond), 10, 0)
	remindOpening(t, s, r, active.IssueStart.Add(-5*time.Minute), 10, 1)
	if got := r.taken(); got[0].UserID != 1 || r.calls[0].template != active.ID {
		t.Errorf("reminded %+v of template %d, want user 1 of the active template %d", got, r.calls[0].template, active.ID)
	}
	// A paused template's subscribers wait; past the issue end nobody is
	// reminded.
	remindOpening(t, s, r, active.IssueStart, 10, 0)
	remindOpening(t, s, r, paused.IssueEnd, 10, 0)
	if _, err := s.Templates.UpdateTemplate(t.Context(), quan.AnyShop, paused.ID, "test", quan.ActionResume, (*quan.Template).Resume); err != nil {
		t.Fatalf("resume: %v", err)
	}
	remindOpening(t, s, r, paused.IssueEnd, 10, 0)
	remindOpening(t, s, r, paused.IssueStart.Add(time.Hour), 10, 2)
}

func testSubscriptions(t *testing.T, s RemindStores) {
	early := openingTemplate(t, s, "early", quan.TemplateActive, 0)
	late := openingTemplate(t, s, "late", quan.TemplateActive, time.Hour)
	if _, err := s.Templates.UpdateTemplate(t.Context(), quan.AnyShop, late.ID, "test", quan.ActionUpdate, func(tpl *quan.Template) error {
		tpl.IssueStart = tpl.IssueStart.Add(24 * time.Hour)
		return nil
	}); err != nil {
		t.Fatalf("move the late template: %v", err)
	}
	subscribe(t, s, early.ID, 1, base, true)
	subscribe(t, s, late.ID, 1, base.Add(time.Second), true)
	subscribe(t, s, late.ID, 2, base, true)
	got, err := s.Reminders.Subscriptions(t.Context(), 1)
	if err != nil || len(got) != 2 {
		t.Fatalf("Subscriptions(1) = %+v, %v; want 2", got, err)
	}
	lateStart := late.IssueStart.Add(24 * time.Hour)
	if g := got[0]; g.TemplateID != late.ID || g.Name != "late" || !g.IssueStart.Equal(lateStart) ||
		!g.RemindAt.Equal(lateStart.Add(-time.Hour)) || !g.CreatedAt.Equal(base.Add(time.Second)) || !g.NotifiedAt.IsZero() || g.UserID != 1 {
		t.Errorf("first subscription %+v, want the late template's, reminded an hour before", g)
	}
	if g := got[1]; g.TemplateID != early.ID || !g.RemindAt.Equal(early.IssueStart.Add(-5*time.Minute)) {
		t.Errorf("second subscription %+v, want the early template's, reminded 5 minutes before", g)
	}
	if got, err := s.Reminders.Subscriptions(t.Context(), 3); err != nil || len(got) != 0 {
		t.Errorf("Subscriptions of a user with none = %+v, %v", got, err)
	}
}
