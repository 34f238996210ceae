package quantest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/quanhq/quan"
)

// NotifyStores are the ports of one store that notifications use; the
// task ports issue the coupons broadcasts are seen through.
type NotifyStores struct {
	TaskStores
	Notify   quan.NotificationStore
	Contacts quan.ContactStore
	Secrets  quan.SecretStore
}

// TestNotificationStore runs the conformance suite of
// quan.NotificationStore and quan.ContactStore. newStores returns the
// ports of a fresh, empty store for each subtest.
func TestNotificationStore(t *testing.T, newStores func(t *testing.T) NotifyStores) {
	t.Helper()
	run := func(name string, test func(*testing.T, NotifyStores)) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, newStores(t))
		})
	}
	run("Record/OncePerKey", testRecordOnce)
	run("Record/InvalidStoresNothing", testRecordInvalid)
	run("Take/LeaseThenRetaken", testTakeLease)
	run("Take/ConcurrentOwnersNeverShare", testTakeConcurrent)
	run("Finish/SentDeferredFailed", testFinish)
	run("Finish/OnlyByTheHolder", testFinishHolder)
	run("Counts", testNotificationCounts)
	run("Pending/DueAndHeld", testPending)
	run("Secret/OnePerName", testSecret)
	run("Inbox/BroadcastSeenByHolders", testInboxBroadcast)
	run("Inbox/MarkRead", testInboxMarkRead)
	run("Popups/ShownOnceUntilExpired", testPopups)
	run("DeleteInApp/KeepsOutbox", testDeleteInApp)
	run("Contacts", testContacts)
	run("Contacts/Import", testImportContacts)
}

var notifyNow = base.Add(2 * time.Hour)

func outbox(source string, user int64, ch quan.NotifyType) *quan.Notification {
	addr := "+8613800000000"
	if ch == quan.NotifyEmail {
		addr = fmt.Sprintf("u%d@example.com", user)
	}
	return &quan.Notification{Source: source, UserID: user, Channel: ch, Address: addr, Kind: quan.MessageIssued,
		Lang: quan.LangZH, Vars: quan.MessageVars{TemplateName: "满100减20", AmountOff: 2000, Threshold: 10000}}
}

func record(t *testing.T, s NotifyStores, now time.Time, want int, ns ...*quan.Notification) {
	t.Helper()
	got, err := s.Notify.RecordNotifications(t.Context(), now, ns)
	if err != nil || got != want {
		t.Fatalf("RecordNotifications = %d, %v; want %d inserted", got, err, want)
	}
}

func lookup(t *testing.T, s NotifyStores, source string, user int64, ch quan.NotifyType) *quan.Notification {
	t.Helper()
	n, err := s.Notify.Notification(t.Context(), source, user, ch)
	if err != nil {
		t.Fatalf("Notification(%s, %d, %s): %v", source, user, ch, err)
	}
	return n
}

func take(t *testing.T, s NotifyStores, ch quan.NotifyType, owner string, now time.Time, limit int) []*quan.Notification {
	t.Helper()
	ns, err := s.Notify.TakeNotifications(t.Context(), ch, owner, now, now.Add(time.Minute), limit)
	if err != nil {
		t.Fatalf("TakeNotifications(%s, %s): %v", ch, owner, err)
	}
	return ns
}

func keys(ns []*quan.Notification) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = fmt.Sprintf("%s/%d/%s", n.Source, n.UserID, n.Channel)
	}
	slices.Sort(out)
	return out
}

func testRecordOnce(t *testing.T, s NotifyStores) {
	n := outbox("task:1", 7, quan.NotifySMS)
	n.ExpiresAt = notifyNow.Add(time.Hour)
	record(t, s, notifyNow, 2, n, outbox("task:1", 7, quan.NotifyEmail))
	// The same key again, even with other values, and a new key.
	again := outbox("task:1", 7, quan.NotifySMS)
	again.Address = "+8613900000000"
	record(t, s, notifyNow.Add(time.Minute), 1, again, outbox("task:1", 8, quan.NotifySMS))

	got := lookup(t, s, "task:1", 7, quan.NotifySMS)
	if got.ID == 0 || got.Status != quan.NotificationQueued || got.Address != "+8613800000000" || got.Kind != quan.MessageIssued ||
		got.Lang != quan.LangZH || got.Vars != n.Vars || got.Attempts != 0 || !got.NextAt.Equal(notifyNow) ||
		!got.CreatedAt.Equal(notifyNow) || !got.UpdatedAt.Equal(notifyNow) || !got.ExpiresAt.Equal(n.ExpiresAt) {
		t.Errorf("read back %+v, want the first recording, queued and due at %s", got, notifyNow)
	}
	if _, err := s.Notify.Notification(t.Context(), "task:1", 9, quan.NotifySMS); !errors.Is(err, quan.ErrNotFound) {
		t.Errorf("Notification of a key never recorded: %v, want ErrNotFound", err)
	}
	// No contact: recorded failed, never due.
	nc := &quan.Notification{Source: "task:1", UserID: 9, Channel: quan.NotifySMS, Kind: quan.MessageIssued,
		Status: quan.NotificationFailed, Reason: quan.ReasonNoContact}
	record(t, s, notifyNow, 1, nc)
	if got := lookup(t, s, "task:1", 9, quan.NotifySMS); got.Status != quan.NotificationFailed || got.Reason != quan.ReasonNoContact || !got.NextAt.IsZero() {
		t.Errorf("no-contact notification read back %+v", got)
	}
	// Inbox entries are sent once recorded, and never due.
	record(t, s, notifyNow, 1, &quan.Notification{Source: "task:1", UserID: 7, Channel: quan.NotifyInbox, Kind: quan.MessageIssued})
	if got := lookup(t, s, "task:1", 7, quan.NotifyInbox); got.Status != quan.NotificationSent || !got.NextAt.IsZero() {
		t.Errorf("inbox entry read back %+v, want sent", got)
	}
	if ns := take(t, s, quan.NotifySMS, "a", notifyNow.Add(time.Hour), 10); len(ns) != 2 {
		t.Errorf("took %v, want the two queued SMS", keys(ns))
	}
}

func testRecordInvalid(t *testing.T, s NotifyStores) {
	for name, n := range map[string]*quan.Notification{
		"bad source":           outbox("task/1", 1, quan.NotifySMS),
		"no address":           {Source: "task:1", UserID: 1, Channel: quan.NotifySMS, Kind: quan.MessageIssued},
		"sms broadcast":        {Source: "task:1", TaskID: 1, Channel: quan.NotifySMS, Address: "+8613800000000", Kind: quan.MessageIssued},
		"broadcast of no task": {Source: "task:1", Channel: quan.NotifyInbox, Kind: quan.MessageIssued},
		"no kind":              {Source: "task:1", UserID: 1, Channel: quan.NotifyInbox},
	} {
		_, err := s.Notify.RecordNotifications(t.Context(), notifyNow, []*quan.Notification{outbox("task:1", 2, quan.NotifySMS), n})
		if !errors.Is(err, quan.ErrInvalid) {
			t.Errorf("%s: RecordNotifications = %v, want ErrInvalid", name, err)
		}
	}
	if _, err := s.Notify.Notification(t.Context(), "task:1", 2, quan.NotifySMS); !errors.Is(err, quan.ErrNotFound) {
		t.Errorf("a valid notification recorded with an invalid one was stored: %v", err)
	}
}

func testTakeLease(t *testing.T, s NotifyStores) {
	later := outbox("task:1", 3, quan.NotifySMS)
	later.NextAt = notifyNow.Add(time.Hour)
	record(t, s, notifyNow, 4, outbox("task:1", 1, quan.NotifySMS), outbox("task:1", 2, quan.NotifySMS), later,
		outbox("task:1", 1, quan.NotifyEmail))
	got := take(t, s, quan.NotifySMS, "a", notifyNow, 10)
	if want := []string{"task:1/1/sms", "task:1/2/sms"}; !slices.Equal(keys(got), want) {
		t.Fatalf("took %v, want %v (due, on the channel)", keys(got), want)
	}
	for _, n := range got {
		if n.Attempts != 1 || n.Retaken || !n.NextAt.Equal(notifyNow.Add(time.Minute)) {
			t.Errorf("taken %+v: want attempt 1, not retaken, held until the lease", n)
		}
	}
	if again := take(t, s, quan.NotifySMS, "b", notifyNow.Add(59*time.Second), 10); len(again) != 0 {
		t.Errorf("another owner took %v during the lease", keys(again))
	}
	// a dies; after its lease b gets the messages, marked retaken.
	after := notifyNow.Add(time.Minute)
	again := take(t, s, quan.NotifySMS, "b", after, 10)
	if want := []string{"task:1/1/sms", "task:1/2/sms"}; !slices.Equal(keys(again), want) {
		t.Fatalf("after the lease b took %v, want %v", keys(again), want)
	}
	for _, n := range again {
		if n.Attempts != 2 || !n.Retaken {
			t.Errorf("retaken %+v: want attempt 2, retaken", n)
		}
	}
	if _, err := s.Notify.FinishNotifications(t.Context(), "b", after, []quan.NotificationResult{
		{ID: again[0].ID, Status: quan.NotificationSent}, {ID: again[1].ID, Status: quan.NotificationSent}}); err != nil {
		t.Fatal(err)
	}
	if n := take(t, s, quan.NotifySMS, "a", notifyNow.Add(time.Hour), 10); len(n) != 1 || n[0].UserID != 3 || n[0].Attempts != 1 {
		t.Errorf("an hour later took %v, want user 3's, now due", keys(n))
	}
}

func testTakeConcurrent(t *testing.T, s NotifyStores) {
	const n, owners = 300, 4
	ns := make([]*quan.Notification, n)
	for i := range ns {
		ns[i] = outbox("task:9", int64(i+1), quan.NotifySMS)
	}
	record(t, s, notifyNow, n, ns...)
	var (
		mu    sync.Mutex
		seen  = map[int64]string{}
		wg    sync.WaitGroup
		start = make(chan struct{})
	)
	for o := range owners {
		owner := fmt.Sprintf("owner-%d", o)
		wg.Go(func() {
			<-start
			for {
				got, err := s.Notify.TakeNotifications(t.Context(), quan.NotifySMS, owner, notifyNow, notifyNow.Add(time.Minute), 7)
				if err != nil {
					t.Error(err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, m := range got {
					if prev, ok := seen[m.ID]; ok {
						t.Errorf("message %d taken by %s and %s", m.ID, prev, owner)
					}
					seen[m.ID] = owner
				}
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	if len(seen) != n {
		t.Errorf("%d messages taken, want %d", len(seen), n)
	}
}

func testFinish(t *testing.T, s NotifyStores) {
	record(t, s, notifyNow, 4, outbox("task:1", 1, quan.NotifySMS), outbox("task:1", 2, quan.NotifySMS),
		outbox("task:1", 3, quan.NotifySMS), outbox("task:1", 4, quan.NotifySMS))
	got := take(t, s, quan.NotifySMS, "a", notifyNow, 10)
	id := map[int64]int64{}
	for _, n := range got {
		id[n.UserID] = n.ID
	}
	retry, quiet := notifyNow.Add(30*time.Second), notifyNow.Add(8*time.Hour)
	at := notifyNow.Add(time.Second)
	n, err := s.Notify.FinishNotifications(t.Context(), "a", at, []quan.NotificationResult{
		{ID: id[1], Status: quan.NotificationSent},
		{ID: id[2], Status: quan.NotificationDeferred, Reason: "503 busy", NextAt: retry},
		{ID: id[3], Status: quan.NotificationFailed, Reason: "invalid number"},
		{ID: id[4], Status: quan.NotificationDeferred, Reason: "quiet hours", NextAt: quiet, GiveBack: true},
	})
	if err != nil || n != 4 {
		t.Fatalf("FinishNotifications = %d, %v; want 4", n, err)
	}
	for user, want := range map[int64]quan.Notification{
		1: {Status: quan.NotificationSent, Attempts: 1},
		2: {Status: quan.NotificationDeferred, Reason: "503 busy", Attempts: 1, NextAt: retry},
		3: {Status: quan.NotificationFailed, Reason: "invalid number", Attempts: 1},
		4: {Status: quan.NotificationDeferred, Reason: "quiet hours", Attempts: 0, NextAt: quiet},
	} {
		got := lookup(t, s, "task:1", user, quan.NotifySMS)
		if got.Status != want.Status || got.Reason != want.Reason || got.Attempts != want.Attempts || !got.NextAt.Equal(want.NextAt) || !got.UpdatedAt.Equal(at) {
			t.Errorf("user %d: %+v, want %+v updated at %s", user, got, want, at)
		}
	}
	again := take(t, s, quan.NotifySMS, "b", retry, 10)
	if !slices.Equal(keys(again), []string{"task:1/2/sms"}) || again[0].Retaken || again[0].Attempts != 2 {
		t.Fatalf("at the retry took %+v, want user 2's, not retaken, attempt 2", again)
	}
	if n, err := s.Notify.FinishNotifications(t.Context(), "b", retry, []quan.NotificationResult{{ID: again[0].ID, Status: quan.NotificationSent}}); err != nil || n != 1 {
		t.Fatalf("finish the retry: %d, %v", n, err)
	}
	if again := take(t, s, quan.NotifySMS, "b", quiet, 10); !slices.Equal(keys(again), []string{"task:1/4/sms"}) || again[0].Attempts != 1 {
		t.Errorf("after quiet hours took %v, want user 4's at attempt 1", keys(again))
	}
	if _, err := s.Notify.FinishNotifications(t.Context(), "b", at, []quan.NotificationResult{{ID: id[2], Status: quan.NotificationDeferred}}); !errors.Is(err, quan.ErrInvalid) {
		t.Errorf("a deferral without a time: %v, want ErrInvalid", err)
	}
}

func testFinishHolder(t *testing.T, s NotifyStores) {
	record(t, s, notifyNow, 1, outbox("task:1", 1, quan.NotifyEmail))
	a := take(t, s, quan.NotifyEmail, "a", notifyNow, 1)
	b := take(t, s, quan.NotifyEmail, "b", notifyNow.Add(time.Minute), 1) // a's lease ran out
	if len(a) != 1 || len(b) != 1 {
		t.Fatalf("took %v then %v", keys(a), keys(b))
	}
	sent := []quan.NotificationResult{{ID: a[0].ID, Status: quan.NotificationSent}}
	if n, err := s.Notify.FinishNotifications(t.Context(), "a", notifyNow.Add(time.Minute), sent); err != nil || n != 0 {
		t.Errorf("the owner whose lease ran out finished %d, %v; want 0", n, err)
	}
	if n, err := s.Notify.FinishNotifications(t.Context(), "b", notifyNow.Add(time.Minute), sent); err != nil || n != 1 {
		t.Errorf("the holder finished %d, %v; want 1", n, err)
	}
	if n, err := s.Notify.FinishNotifications(t.Context(), "b", notifyNow.Add(time.Minute), sent); err != nil || n != 0 {
		t.Errorf("finishing twice: %d, %v; want 0", n, err)
	}
}

func testNotificationCounts(t *testing.T, s NotifyStores) {
	record(t, s, notifyNow, 5, outbox("task:1", 1, quan.NotifySMS), outbox("task:1", 2, quan.NotifySMS),
		&quan.Notification{Source: "task:1", UserID: 3, Channel: quan.NotifySMS, Kind: quan.MessageIssued, Status: quan.NotificationFailed, Reason: quan.ReasonNoContact},
		&quan.Notification{Source: "task:1", TaskID: 1, Channel: quan.NotifyInbox, Kind: quan.MessageIssued},
		outbox("task:2", 1, quan.NotifySMS))
	got, err := s.Notify.NotificationCounts(t.Context(), "task:1")
	want := []quan.NotificationCount{
		{Channel: quan.NotifyInbox, Status: quan.NotificationSent, Count: 1},
		{Channel: quan.NotifySMS, Status: quan.NotificationFailed, Count: 1},
		{Channel: quan.NotifySMS, Status: quan.NotificationQueued, Count: 2},
	}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("NotificationCounts = %v, %v; want %v", got, err, want)
	}
}

func testPending(t *testing.T, s NotifyStores) {
	later := outbox("task:1", 4, quan.NotifySMS)
	later.NextAt = notifyNow.Add(time.Hour)
	record(t, s, notifyNow, 7, outbox("task:1", 1, quan.NotifySMS), outbox("task:1", 2, quan.NotifySMS),
		outbox("task:1", 3, quan.NotifySMS), later, outbox("task:1", 1, quan.NotifyEmail),
		&quan.Notification{Source: "task:1", UserID: 5, Channel: quan.NotifySMS, Kind: quan.MessageIssued, Status: quan.NotificationFailed, Reason: quan.ReasonNoContact},
		&quan.Notification{Source: "task:1", TaskID: 1, Channel: quan.NotifyInbox, Kind: quan.MessageIssued})
	pending := func(at time.Time) map[quan.NotifyType]int64 {
		t.Helper()
		got, err := s.Notify.PendingNotifications(t.Context(), at)
		if err != nil {
			t.Fatal(err)
		}
		for ch, n := range got { // a channel with none may be there with 0
			if n == 0 {
				delete(got, ch)
			}
		}
		return got
	}
	want := map[quan.NotifyType]int64{quan.NotifySMS: 3, quan.NotifyEmail: 1}
	if got := pending(notifyNow); !maps.Equal(got, want) {
		t.Fatalf("pending at first: %v, want %v (due, not the one due later, not failed, no inbox)", got, want)
	}
	got := take(t, s, quan.NotifySMS, "a", notifyNow, 2)
	if got := pending(notifyNow); !maps.Equal(got, want) {
		t.Errorf("pending with two held: %v, want %v (held still count)", got, want)
	}
	if _, err := s.Notify.FinishNotifications(t.Context(), "a", notifyNow, []quan.NotificationResult{
		{ID: got[0].ID, Status: quan.NotificationSent},
		{ID: got[1].ID, Status: quan.NotificationDeferred, Reason: "busy", NextAt: notifyNow.Add(30 * time.Second)}}); err != nil {
		t.Fatal(err)
	}
	want = map[quan.NotifyType]int64{quan.NotifySMS: 1, quan.NotifyEmail: 1}
	if got := pending(notifyNow); !maps.Equal(got, want) {
		t.Errorf("pending after one sent, one deferred: %v, want %v", got, want)
	}
	want = map[quan.NotifyType]int64{quan.NotifySMS: 3, quan.NotifyEmail: 1}
	if got := pending(notifyNow.Add(time.Hour)); !maps.Equal(got, want) {
		t.Errorf("pending an hour later: %v, want %v (the deferred and the later one due)", got, want)
	}
}

func testSecret(t *testing.T, s NotifyStores) {
	const workers = 8
	got := make([][]byte, workers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range workers {
		wg.Go(func() {
			<-start
			var err error
			if got[i], err = s.Secrets.Secret(t.Context(), quan.SecretUnsubscribe); err != nil {
				t.Error(err)
			}
		})
	}
	close(start)
	wg.Wait()
	for i, g := range got {
		if len(g) != quan.SecretSize || !slices.Equal(g, got[0]) {
			t.Fatalf("caller %d got secret %x, caller 0 %x: want the same %d bytes", i, g, got[0], quan.SecretSize)
		}
	}
	other, err := s.Secrets.Secret(t.Context(), "other")
	if err != nil || slices.Equal(other, got[0]) {
		t.Errorf("another name's secret: %x, %v; want another secret", other, err)
	}
	if _, err := s.Secrets.Secret(t.Context(), ""); !errors.Is(err, quan.ErrInvalid) {
		t.Errorf("an empty name: %v, want ErrInvalid", err)
	}
}

// heldTask issues a coupon of a fresh template to each of users through a
// task, and returns the task.
func heldTask(t *testing.T, s NotifyStores, name string, users ...int64) *quan.Task {
	t.Helper()
	// A task that notifies on no channel: the tests record its
	// notifications themselves.
	_, task := notifyingTask(t, s, name, 100)
	rows := make([]quan.ChunkRow, len(users))
	for i, u := range users {
		rows[i] = user(int64(i+1), u)
	}
	apply(t, s.TaskStores, chunk(task, 1, rows...), issued(int64(len(users))))
	return task
}

func inbox(t *testing.T, s NotifyStores, f quan.InboxFilter) ([]int64, int) {
	t.Helper()
	es, total, err := s.Notify.Inbox(t.Context(), f)
	if err != nil {
		t.Fatalf("Inbox(%+v): %v", f, err)
	}
	ids := make([]int64, len(es))
	for i, e := range es {
		ids[i] = e.ID
	}
	return ids, total
}

func testInboxBroadcast(t *testing.T, s NotifyStores) {
	task := heldTask(t, s, "broadcast", 1, 2)
	other := heldTask(t, s, "other", 2)
	src := fmt.Sprintf("task:%d", task.ID)
	record(t, s, notifyNow, 3,
		&quan.Notification{Source: src, TaskID: task.ID, Channel: quan.NotifyInbox, Kind: quan.MessageIssued, Vars: quan.MessageVars{TemplateName: "broadcast"}},
		&quan.Notification{Source: "expiring:coupon:5", UserID: 1, Channel: quan.NotifyInbox, Kind: quan.MessageExpiring},
		&quan.Notification{Source: fmt.Sprintf("task:%d", other.ID), TaskID: other.ID, Channel: quan.NotifyInbox, Kind: quan.MessageIssued})
	b := lookup(t, s, src, 0, quan.NotifyInbox)
	e := lookup(t, s, "expiring:coupon:5", 1, quan.NotifyInbox)
	o := lookup(t, s, fmt.Sprintf("task:%d", other.ID), 0, quan.NotifyInbox)

	if ids, total := inbox(t, s, quan.InboxFilter{UserID: 1}); !slices.Equal(ids, []int64{e.ID, b.ID}) || total != 2 {
		t.Errorf("user 1's inbox %v (total %d), want %v newest first", ids, total, []int64{e.ID, b.ID})
	}
	if ids, total := inbox(t, s, quan.InboxFilter{UserID: 2}); !slices.Equal(ids, []int64{o.ID, b.ID}) || total != 2 {
		t.Errorf("user 2's inbox %v (total %d), want %v", ids, total, []int64{o.ID, b.ID})
	}
	if ids, total := inbox(t, s, quan.InboxFilter{UserID: 3}); len(ids) != 0 || total != 0 {
		t.Errorf("user 3, who holds no coupon of the task, sees %v", ids)
	}
	if ids, total := inbox(t, s, quan.InboxFilter{UserID: 1, Offset: 1, Limit: 1}); !slices.Equal(ids, []int64{b.ID}) || total != 2 {
		t.Errorf("page 2 of 1: %v (total %d), want %v", ids, total, []int64{b.ID})
	}
	es, _, err := s.Notify.Inbox(t.Context(), quan.InboxFilter{UserID: 1})
	if err != nil || len(es) != 2 || es[1].Vars.TemplateName != "broadcast" || es[1].Kind != quan.MessageIssued || !es[1].MarkedAt.IsZero() {
		t.Errorf("inbox entries %+v, %v", es, err)
	}
}

func testInboxMarkRead(t *testing.T, s NotifyStores) {
	task := heldTask(t, s, "read", 1, 2)
	src := fmt.Sprintf("task:%d", task.ID)
	record(t, s, notifyNow, 3,
		&quan.Notification{Source: src, TaskID: task.ID, Channel: quan.NotifyInbox, Kind: quan.MessageIssued},
		&quan.Notification{Source: "expiring:coupon:5", UserID: 1, Channel: quan.NotifyInbox, Kind: quan.MessageExpiring},
		&quan.Notification{Source: "expiring:coupon:6", UserID: 2, Channel: quan.NotifyInbox, Kind: quan.MessageExpiring})
	b := lookup(t, s, src, 0, quan.NotifyInbox)
	mine := lookup(t, s, "expiring:coupon:5", 1, quan.NotifyInbox)
	theirs := lookup(t, s, "expiring:coupon:6", 2, quan.NotifyInbox)
	unread := func(user int64, want int) {
		t.Helper()
		if n, err := s.Notify.UnreadCount(t.Context(), user); err != nil || n != want {
			t.Errorf("UnreadCount(%d) = %d, %v; want %d", user, n, err, want)
		}
	}
	unread(1, 2)
	readAt := notifyNow.Add(time.Minute)
	if n, err := s.Notify.MarkRead(t.Context(), 1, []int64{b.ID, theirs.ID, 999999}, readAt); err != nil || n != 1 {
		t.Errorf("MarkRead(broadcast, another's, none) = %d, %v; want 1", n, err)
	}
	unread(1, 1)
	unread(2, 2) // a broadcast read by user 1 is still unread for user 2
	if ids, total := inbox(t, s, quan.InboxFilter{UserID: 1, Unread: true}); !slices.Equal(ids, []int64{mine.ID}) || total != 1 {
		t.Errorf("unread inbox %v (total %d), want %v", ids, total, []int64{mine.ID})
	}
	es, _, _ := s.Notify.Inbox(t.Context(), quan.InboxFilter{UserID: 1})
	if len(es) != 2 || !es[1].MarkedAt.Equal(readAt) || !es[0].MarkedAt.IsZero() {
		t.Errorf("inbox after reading the broadcast: %+v", es)
	}
	if n, err := s.Notify.MarkRead(t.Context(), 1, []int64{b.ID}, readAt); err != nil || n != 0 {
		t.Errorf("marking read twice = %d, %v; want 0", n, err)
	}
	if n, err := s.Notify.MarkRead(t.Context(), 1, nil, readAt); err != nil || n != 1 {
		t.Errorf("MarkRead(all) = %d, %v; want 1", n, err)
	}
	unread(1, 0)
	unread(2, 2)
}

func testPopups(t *testing.T, s NotifyStores) {
	task := heldTask(t, s, "popup", 1)
	src := fmt.Sprintf("task:%d", task.ID)
	record(t, s, notifyNow, 3,
		&quan.Notification{Source: src, TaskID: task.ID, Channel: quan.NotifyPopup, Kind: quan.MessageIssued, ExpiresAt: notifyNow.Add(24 * time.Hour)},
		&quan.Notification{Source: "opening:template:7", UserID: 1, Channel: quan.NotifyPopup, Kind: quan.MessageOpening, ExpiresAt: notifyNow.Add(time.Hour)},
		&quan.Notification{Source: "opening:template:7", UserID: 1, Channel: quan.NotifyInbox, Kind: quan.MessageOpening})
	b := lookup(t, s, src, 0, quan.NotifyPopup)
	o := lookup(t, s, "opening:template:7", 1, quan.NotifyPopup)
	popups := func(user int64, at time.Time) []int64 {
		t.Helper()
		es, err := s.Notify.Popups(t.Context(), user, at)
		if err != nil {
			t.Fatal(err)
		}
		ids := []int64{}
		for _, e := range es {
			ids = append(ids, e.ID)
		}
		return ids
	}
	if got := popups(1, notifyNow); !slices.Equal(got, []int64{o.ID, b.ID}) {
		t.Errorf("popups %v, want %v", got, []int64{o.ID, b.ID})
	}
	if got := popups(1, notifyNow); len(got) != 2 {
		t.Errorf("reading popups marked them: %v", got)
	}
	if got := popups(1, notifyNow.Add(time.Hour)); !slices.Equal(got, []int64{b.ID}) {
		t.Errorf("an hour later popups %v, want only the broadcast (the other expired)", got)
	}
	if err := s.Notify.AckPopup(t.Context(), 1, b.ID, notifyNow); err != nil {
		t.Fatal(err)
	}
	if err := s.Notify.AckPopup(t.Context(), 1, b.ID, notifyNow); err != nil {
		t.Errorf("acking twice: %v", err)
	}
	if got := popups(1, notifyNow); !slices.Equal(got, []int64{o.ID}) {
		t.Errorf("after the ack popups %v, want %v", got, []int64{o.ID})
	}
	if err := s.Notify.AckPopup(t.Context(), 2, b.ID, notifyNow); !errors.Is(err, quan.ErrNotFound) {
		t.Errorf("acking a popup of a task the user holds nothing of: %v, want ErrNotFound", err)
	}
	inboxID := lookup(t, s, "opening:template:7", 1, quan.NotifyInbox).ID
	if err := s.Notify.AckPopup(t.Context(), 1, inboxID, notifyNow); !errors.Is(err, quan.ErrNotFound) {
		t.Errorf("acking an inbox message as a popup: %v, want ErrNotFound", err)
	}
	if n, _ := s.Notify.UnreadCount(t.Context(), 1); n != 1 {
		t.Errorf("popups count in the inbox: unread %d, want 1", n)
	}
}

func testDeleteInApp(t *testing.T, s NotifyStores) {
	task := heldTask(t, s, "retention", 1)
	old, recent := notifyNow, notifyNow.Add(48*time.Hour)
	record(t, s, old, 3,
		&quan.Notification{Source: fmt.Sprintf("task:%d", task.ID), TaskID: task.ID, Channel: quan.NotifyInbox, Kind: quan.MessageIssued},
		&quan.Notification{Source: "expiring:coupon:1", UserID: 1, Channel: quan.NotifyPopup, Kind: quan.MessageExpiring},
		outbox("expiring:coupon:1", 1, quan.NotifySMS))
	record(t, s, recent, 1, &quan.Notification{Source: "expiring:coupon:2", UserID: 1, Channel: quan.NotifyInbox, Kind: quan.MessageExpiring})
	if n, err := s.Notify.MarkRead(t.Context(), 1, nil, recent); err != nil || n != 2 {
		t.Fatalf("MarkRead(all) = %d, %v", n, err)
	}
	total := 0
	for {
		n, err := s.Notify.DeleteInApp(t.Context(), old.Add(time.Hour), 1)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		total += n
	}
	if total != 3 { // the broadcast, its mark and the popup
		t.Errorf("DeleteInApp deleted %d rows in all, want 3", total)
	}
	if ids, _ := inbox(t, s, quan.InboxFilter{UserID: 1}); len(ids) != 1 {
		t.Errorf("inbox after the sweep %v, want the recent message", ids)
	}
	if n, _ := s.Notify.UnreadCount(t.Context(), 1); n != 0 {
		t.Errorf("unread %d after the sweep, want 0", n)
	}
	lookup(t, s, "expiring:coupon:1", 1, quan.NotifySMS) // the outbox stays
}

func testContacts(t *testing.T, s NotifyStores) {
	c, err := s.Contacts.Contact(t.Context(), 5)
	if err != nil || c.UserID != 5 || c.Phone != "" || c.Lang != quan.LangZH || c.OptOut == nil || len(c.OptOut) != 0 {
		t.Fatalf("Contact of a user with none = %+v, %v", c, err)
	}
	at := notifyNow
	saved, err := s.Contacts.UpdateContact(t.Context(), 5, at, func(c *quan.Contact) error {
		c.Phone, c.Mail, c.Lang, c.OptOut = "+8613800000005", "five@example.com", quan.LangEN, []quan.NotifyType{quan.NotifyPopup, quan.NotifySMS}
		return nil
	})
	if err != nil || !saved.UpdatedAt.Equal(at) {
		t.Fatalf("UpdateContact = %+v, %v", saved, err)
	}
	boom := errors.New("boom")
	if _, err := s.Contacts.UpdateContact(t.Context(), 5, at.Add(time.Hour), func(c *quan.Contact) error {
		c.Phone = ""
		return boom
	}); !errors.Is(err, boom) {
		t.Errorf("UpdateContact with a failing fn: %v", err)
	}
	got, err := s.Contacts.Contact(t.Context(), 5)
	if err != nil || got.Phone != "+8613800000005" || got.Mail != "five@example.com" || got.Lang != quan.LangEN ||
		!slices.Equal(got.OptOut, []quan.NotifyType{quan.NotifyPopup, quan.NotifySMS}) || !got.UpdatedAt.Equal(at) {
		t.Errorf("read back %+v, %v", got, err)
	}
	if _, err := s.Contacts.UpdateContact(t.Context(), 6, at, func(c *quan.Contact) error { c.Mail = "six@example.com"; return nil }); err != nil {
		t.Fatal(err)
	}
	m, err := s.Contacts.Contacts(t.Context(), []int64{5, 6, 7})
	if err != nil || len(m) != 2 || m[5].Phone != "+8613800000005" || m[6].Mail != "six@example.com" || m[6].OptOut == nil {
		t.Errorf("Contacts = %v, %v", m, err)
	}
}
