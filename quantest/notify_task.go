package quantest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/quanhq/quan"
)

// TestTaskNotifications runs the conformance suite of the notifications a
// distribution records in ApplyChunk's transaction (see
// quan.ChunkNotifications) and of FailedNotifications. newStores returns
// the ports of a fresh, empty store for each subtest.
func TestTaskNotifications(t *testing.T, newStores func(t *testing.T) NotifyStores) {
	t.Helper()
	run := func(name string, test func(*testing.T, NotifyStores)) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, newStores(t))
		})
	}
	run("ApplyChunk/BroadcastOncePerTask", testTaskBroadcastOnce)
	run("ApplyChunk/PerRowAddresses", testTaskPerRow)
	run("ApplyChunk/RedeliveryRecordsNothingTwice", testTaskRedelivery)
	run("ApplyChunk/DryRunAndNoChannelRecordNothing", testTaskNothing)
	run("FailedNotifications/ByChannelInIDOrder", testFailedNotifications)
}

// notifyingTask stores a running task of a fresh template of stock and a
// limit of one per user, notifying on chs.
func notifyingTask(t *testing.T, s NotifyStores, name string, stock int64, chs ...quan.NotifyType) (*quan.Template, *quan.Task) {
	t.Helper()
	tpl := activeTemplate(t, s.TaskStores, name, stock, 1)
	task := newTask(t, tpl.ShopNo, tpl.ID, name)
	task.Notify = append([]quan.NotifyType{}, chs...)
	task.Status, task.StartedAt, task.UpdatedAt = quan.TaskRunning, base, base
	task.Owner, task.LeaseUntil = runner, chunkNow.Add(time.Hour)
	return tpl, createTask(t, s.TaskStores, task)
}

// contactRow is an undecided row of user on line with the phone and mail
// columns as written.
func contactRow(line, id int64, phone, mail string) quan.ChunkRow {
	r := user(line, id)
	if phone != "" || mail != "" {
		r.Contact = &quan.RowContact{Phone: phone, Mail: mail}
	}
	return r
}

func counts(t *testing.T, s NotifyStores, task *quan.Task) []quan.NotificationCount {
	t.Helper()
	got, err := s.Notify.NotificationCounts(t.Context(), quan.TaskSource(task.ID))
	if err != nil {
		t.Fatalf("NotificationCounts(task %d): %v", task.ID, err)
	}
	return got
}

func testTaskBroadcastOnce(t *testing.T, s NotifyStores) {
	tpl, task := notifyingTask(t, s, "broadcast", 100, quan.NotifyInbox, quan.NotifyPopup)
	// A chunk that issues nothing owes nothing, not even the broadcast.
	apply(t, s.TaskStores, chunk(task, 1, bad(2, "x", quan.CauseInvalidID)),
		quan.TaskCounts{Rows: 1, Failed: quan.FailedCounts{InvalidID: 1}})
	if got := counts(t, s, task); len(got) != 0 {
		t.Fatalf("after a chunk that issued nothing: %v, want none", got)
	}
	c2 := chunk(task, 2, user(3, 11), user(4, 12))
	apply(t, s.TaskStores, c2, issued(2))
	apply(t, s.TaskStores, chunk(task, 3, user(5, 13)), issued(1))
	want := []quan.NotificationCount{
		{Channel: quan.NotifyInbox, Status: quan.NotificationSent, Count: 1},
		{Channel: quan.NotifyPopup, Status: quan.NotificationSent, Count: 1},
	}
	if got := counts(t, s, task); !slices.Equal(got, want) {
		t.Errorf("counts %v, want one broadcast per channel %v", got, want)
	}
	src := quan.TaskSource(task.ID)
	in := lookup(t, s, src, 0, quan.NotifyInbox)
	vars := quan.IssuedVars(tpl, c2.Now)
	if in.TaskID != task.ID || in.Kind != quan.MessageIssued || in.Vars != vars || !in.CreatedAt.Equal(c2.Now) || !in.ExpiresAt.IsZero() {
		t.Errorf("inbox broadcast %+v; want task %d, issued, vars %+v, created %v", in, task.ID, vars, c2.Now)
	}
	if pop := lookup(t, s, src, 0, quan.NotifyPopup); !pop.ExpiresAt.Equal(vars.ValidUntil) {
		t.Errorf("popup expires %v, want the coupons' end %v", pop.ExpiresAt, vars.ValidUntil)
	}
	// Every holder sees the one entry; a user of no chunk does not.
	for _, u := range []int64{11, 13} {
		if ids, total := inbox(t, s, quan.InboxFilter{UserID: u}); !slices.Equal(ids, []int64{in.ID}) || total != 1 {
			t.Errorf("user %d's inbox %v, want the broadcast %d", u, ids, in.ID)
		}
	}
	if ids, _ := inbox(t, s, quan.InboxFilter{UserID: 99}); len(ids) != 0 {
		t.Errorf("user 99, who got nothing, sees %v", ids)
	}
	ps, err := s.Notify.Popups(t.Context(), 12, c2.Now)
	if err != nil || len(ps) != 1 || ps[0].Channel != quan.NotifyPopup {
		t.Errorf("user 12's popups %+v, %v; want the task's popup", ps, err)
	}
}

func testTaskPerRow(t *testing.T, s NotifyStores) {
	_, task := notifyingTask(t, s, "per-row", 5, quan.NotifySMS, quan.NotifyEmail)
	setContact := func(u int64, phone, mail string, lang quan.Lang) {
		t.Helper()
		if _, err := s.Contacts.UpdateContact(t.Context(), u, base, func(c *quan.Contact) error {
			c.Phone, c.Mail, c.Lang = phone, mail, lang
			return c.Normalize()
		}); err != nil {
			t.Fatalf("UpdateContact(%d): %v", u, err)
		}
	}
	setContact(2, "13900000002", "u2@example.com", quan.LangEN)
	setContact(5, "13900000005", "", quan.LangZH)
	setContact(7, "13900000007", "u7@example.com", quan.LangZH)
	c := chunk(task, 1,
		contactRow(2, 1, " 138 1234 5678 ", "Li.Lei@Example.COM"), // the row's columns
		contactRow(3, 2, "", ""),                                  // the contacts on file, in English
		contactRow(4, 3, "", ""),                                  // nothing anywhere
		contactRow(5, 4, "12345", "not-a-mail"),                   // invalid in the row
		contactRow(6, 5, "bad", ""),                               // the row's invalid phone wins over the one on file
		quan.ChunkRow{Line: 7, Raw: "x", Cause: quan.CauseInvalidID, Contact: &quan.RowContact{Phone: "13800000000"}}, // no coupon, no message
		contactRow(8, 6, "13800000006", "u6@example.com"),                                                             // beyond the stock of 5: no coupon, no message
	)
	apply(t, s.TaskStores, c, quan.TaskCounts{Rows: 7, Valid: 5, Issued: 5, Failed: quan.FailedCounts{InvalidID: 1, OutOfStock: 1}})

	src := quan.TaskSource(task.ID)
	for _, w := range []struct {
		user    int64
		ch      quan.NotifyType
		status  quan.NotificationStatus
		address string
		reason  string
		lang    quan.Lang
	}{
		{1, quan.NotifySMS, quan.NotificationQueued, "+8613812345678", "", ""},
		{1, quan.NotifyEmail, quan.NotificationQueued, "Li.Lei@example.com", "", ""},
		{2, quan.NotifySMS, quan.NotificationQueued, "+8613900000002", "", quan.LangEN},
		{2, quan.NotifyEmail, quan.NotificationQueued, "u2@example.com", "", quan.LangEN},
		{3, quan.NotifySMS, quan.NotificationFailed, "", quan.ReasonNoContact, ""},
		{3, quan.NotifyEmail, quan.NotificationFailed, "", quan.ReasonNoContact, ""},
		{4, quan.NotifySMS, quan.NotificationFailed, "12345", quan.ReasonInvalidContact, ""},
		{4, quan.NotifyEmail, quan.NotificationFailed, "not-a-mail", quan.ReasonInvalidContact, ""},
		{5, quan.NotifySMS, quan.NotificationFailed, "bad", quan.ReasonInvalidContact, quan.LangZH},
		{5, quan.NotifyEmail, quan.NotificationFailed, "", quan.ReasonNoContact, quan.LangZH},
	} {
		n := lookup(t, s, src, w.user, w.ch)
		if n.Status != w.status || n.Address != w.address || n.Reason != w.reason || n.Lang != w.lang ||
			n.TaskID != task.ID || n.Kind != quan.MessageIssued || n.Vars.TemplateName != "per-row" {
			t.Errorf("user %d %s: %+v; want %s to %q (%q), lang %q", w.user, w.ch, n, w.status, w.address, w.reason, w.lang)
		}
		if w.status == quan.NotificationQueued && !n.NextAt.Equal(c.Now) {
			t.Errorf("user %d %s due at %v, want the chunk's time %v", w.user, w.ch, n.NextAt, c.Now)
		}
	}
	for _, u := range []int64{6, 7} {
		if _, err := s.Notify.Notification(t.Context(), src, u, quan.NotifySMS); !errors.Is(err, quan.ErrNotFound) {
			t.Errorf("user %d got no coupon, but a message: %v", u, err)
		}
	}
	want := []quan.NotificationCount{
		{Channel: quan.NotifyEmail, Status: quan.NotificationFailed, Count: 3},
		{Channel: quan.NotifyEmail, Status: quan.NotificationQueued, Count: 2},
		{Channel: quan.NotifySMS, Status: quan.NotificationFailed, Count: 3},
		{Channel: quan.NotifySMS, Status: quan.NotificationQueued, Count: 2},
	}
	if got := counts(t, s, task); !slices.Equal(got, want) {
		t.Errorf("counts %v, want %v", got, want)
	}
	// The queued ones are due for the dispatcher at once.
	if got := take(t, s, quan.NotifySMS, "dispatcher", c.Now, 10); !slices.Equal(keys(got), []string{src + "/1/sms", src + "/2/sms"}) {
		t.Errorf("taken %v, want the SMS of users 1 and 2", keys(got))
	}
}

func testTaskRedelivery(t *testing.T, s NotifyStores) {
	_, task := notifyingTask(t, s, "redelivery", 100, quan.NotifyInbox, quan.NotifySMS)
	c := chunk(task, 1, contactRow(2, 1, "13800000001", ""), contactRow(3, 2, "", ""))
	apply(t, s.TaskStores, c, issued(2))
	before := counts(t, s, task)
	again := chunk(task, 1, contactRow(2, 1, "13800000001", ""), contactRow(3, 2, "", ""))
	if n, err := s.Tasks.ApplyChunk(t.Context(), again); !errors.Is(err, quan.ErrChunkApplied) {
		t.Fatalf("chunk 1 again: %+v, %v; want ErrChunkApplied", n, err)
	}
	if got := counts(t, s, task); !slices.Equal(got, before) {
		t.Errorf("after a redelivery: %v, want %v as before", got, before)
	}
	want := []quan.NotificationCount{
		{Channel: quan.NotifyInbox, Status: quan.NotificationSent, Count: 1},
		{Channel: quan.NotifySMS, Status: quan.NotificationFailed, Count: 1},
		{Channel: quan.NotifySMS, Status: quan.NotificationQueued, Count: 1},
	}
	if !slices.Equal(before, want) {
		t.Errorf("counts %v, want %v", before, want)
	}
}

func testTaskNothing(t *testing.T, s NotifyStores) {
	tpl := activeTemplate(t, s.TaskStores, "dry", 100, 1)
	dry := newTask(t, tpl.ShopNo, tpl.ID, "dry")
	dry.DryRun = true
	dry.Status, dry.StartedAt, dry.UpdatedAt = quan.TaskRunning, base, base
	dry.Owner, dry.LeaseUntil = runner, chunkNow.Add(time.Hour)
	createTask(t, s.TaskStores, dry)
	apply(t, s.TaskStores, chunk(dry, 1, contactRow(2, 1, "13800000001", "a@example.com")), quan.TaskCounts{Rows: 1, Valid: 1})
	if got := counts(t, s, dry); len(got) != 0 {
		t.Errorf("a dry run recorded %v", got)
	}
	_, silent := notifyingTask(t, s, "silent", 100)
	apply(t, s.TaskStores, chunk(silent, 1, contactRow(2, 1, "13800000001", "a@example.com")), issued(1))
	if got := counts(t, s, silent); len(got) != 0 {
		t.Errorf("a task without channels recorded %v", got)
	}
}

func testFailedNotifications(t *testing.T, s NotifyStores) {
	_, task := notifyingTask(t, s, "failures", 100, quan.NotifyInbox, quan.NotifySMS, quan.NotifyEmail)
	apply(t, s.TaskStores, chunk(task, 1,
		contactRow(2, 1, "", "a@example.com"),
		contactRow(3, 2, "138", "b@example.com"),
		contactRow(4, 3, "13800000003", ""),
		contactRow(5, 4, "", "c@"),
	), issued(4))
	src := quan.TaskSource(task.ID)
	page := func(ch quan.NotifyType, after int64, limit int) []*quan.Notification {
		t.Helper()
		ns, err := s.Notify.FailedNotifications(t.Context(), src, ch, after, limit)
		if err != nil {
			t.Fatalf("FailedNotifications(%s, %d, %d): %v", ch, after, limit, err)
		}
		return ns
	}
	sms := page(quan.NotifySMS, 0, 10)
	if !slices.Equal(keys(sms), []string{src + "/1/sms", src + "/2/sms", src + "/4/sms"}) ||
		sms[0].Reason != quan.ReasonNoContact || sms[1].Reason != quan.ReasonInvalidContact || sms[1].Address != "138" {
		t.Errorf("failed SMS %v: want users 1 (no_contact), 2 (invalid 138), 4", sms)
	}
	if next := page(quan.NotifySMS, sms[0].ID, 1); !slices.Equal(keys(next), []string{src + "/2/sms"}) {
		t.Errorf("the page after %d: %v, want user 2's", sms[0].ID, keys(next))
	}
	if mail := page(quan.NotifyEmail, 0, 10); !slices.Equal(keys(mail), []string{src + "/3/email", src + "/4/email"}) {
		t.Errorf("failed email %v, want users 3 and 4", keys(mail))
	}
	if in := page(quan.NotifyInbox, 0, 10); len(in) != 0 {
		t.Errorf("failed inbox %v, want none", keys(in))
	}
}
