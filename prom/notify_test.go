package prom_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/notify"
	"github.com/quanhq/quan/prom"
)

// fakeOutbox hands out its messages of a channel once and answers
// PendingNotifications with pending.
type fakeOutbox struct {
	quan.NotificationStore
	msgs    map[quan.NotifyType][]*quan.Notification
	pending map[quan.NotifyType]int64
	err     error
}

func (s *fakeOutbox) TakeNotifications(_ context.Context, ch quan.NotifyType, _ string, _, _ time.Time, _ int) ([]*quan.Notification, error) {
	ns := s.msgs[ch]
	delete(s.msgs, ch)
	return ns, nil
}

func (s *fakeOutbox) FinishNotifications(_ context.Context, _ string, _ time.Time, rs []quan.NotificationResult) (int, error) {
	return len(rs), nil
}

func (s *fakeOutbox) PendingNotifications(context.Context, time.Time) (map[quan.NotifyType]int64, error) {
	return s.pending, s.err
}

// optOuts has user 2 opted out of every channel.
type optOuts struct{ quan.ContactStore }

func (optOuts) Contacts(_ context.Context, users []int64) (map[int64]*quan.Contact, error) {
	return map[int64]*quan.Contact{2: {UserID: 2, OptOut: []quan.NotifyType{quan.NotifyEmail, quan.NotifySMS}}}, nil
}

// answers answers each message by its address: "retry…" RetryLater,
// "fail…" FailedForGood, else Sent.
type answers struct{}

func (answers) Send(_ context.Context, msgs []quan.Outgoing) []quan.SendResult {
	out := make([]quan.SendResult, len(msgs))
	for i, m := range msgs {
		switch {
		case strings.HasPrefix(m.To, "retry"):
			out[i] = quan.SendResult{Outcome: quan.RetryLater, Reason: "busy"}
		case strings.HasPrefix(m.To, "fail"):
			out[i] = quan.SendResult{Outcome: quan.FailedForGood, Reason: "no such number"}
		default:
			out[i] = quan.SendResult{Outcome: quan.Sent}
		}
	}
	return out
}

// TestNotifications: each message a dispatcher handles counts under its
// channel and result, a retaken one as a possible duplicate, and the
// store's waiting messages are read at the scrape (and left out when the
// store does not answer).
func TestNotifications(t *testing.T) {
	msg := func(id, user int64, ch quan.NotifyType, to string, retaken bool) *quan.Notification {
		return &quan.Notification{ID: id, Source: "task:1", UserID: user, Channel: ch, Address: to, Kind: quan.MessageIssued,
			Vars: quan.MessageVars{TemplateName: "券"}, Attempts: 1, Retaken: retaken}
	}
	st := &fakeOutbox{
		msgs: map[quan.NotifyType][]*quan.Notification{
			quan.NotifySMS: {msg(1, 1, quan.NotifySMS, "+8613800000001", false), msg(2, 2, quan.NotifySMS, "+8613800000002", false),
				msg(3, 3, quan.NotifySMS, "retry", false), msg(4, 4, quan.NotifySMS, "+8613800000004", true)},
			quan.NotifyEmail: {msg(5, 5, quan.NotifyEmail, "fail@example.com", false)},
		},
		pending: map[quan.NotifyType]int64{quan.NotifySMS: 1200},
	}
	d := &notify.Dispatcher{Store: st, Contacts: optOuts{}, Owner: "test", Now: func() time.Time { return now },
		Senders: map[quan.NotifyType]quan.Sender{quan.NotifySMS: answers{}, quan.NotifyEmail: answers{}}}
	for _, ch := range []quan.NotifyType{quan.NotifySMS, quan.NotifyEmail} {
		if _, err := d.DispatchOnce(t.Context(), ch); err != nil {
			t.Fatal(err)
		}
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(prom.Notifications(d, st, func() time.Time { return now }))
	var want strings.Builder
	want.WriteString(`
# HELP quan_notification_possible_duplicates_total Messages this process sent again, with the same message id, after a dispatcher took them and never recorded what became of them (it died or lost its lease): the provider may have had them already.
# TYPE quan_notification_possible_duplicates_total counter
quan_notification_possible_duplicates_total{channel="email"} 0
quan_notification_possible_duplicates_total{channel="sms"} 1
# HELP quan_notifications_queued Email and SMS messages waiting to be sent: queued or deferred and due, or held by a dispatcher; not those waiting for a backoff or the end of quiet hours (read from the store at each scrape; the same for every process on one store).
# TYPE quan_notifications_queued gauge
quan_notifications_queued{channel="email"} 0
quan_notifications_queued{channel="sms"} 1200
`)
	want.WriteString(`# HELP quan_notifications_total Email and SMS messages this process's dispatcher handled, by channel and result: sent (the provider accepted it), retried (deferred after the provider asked to retry), failed (refused for good, or out of tries), opted_out (the user opted out before it was sent), quiet_hours (held back until the quiet hours end; not a try).
# TYPE quan_notifications_total counter
quan_notifications_total{channel="email",result="failed"} 1
quan_notifications_total{channel="email",result="opted_out"} 0
quan_notifications_total{channel="email",result="quiet_hours"} 0
quan_notifications_total{channel="email",result="retried"} 0
quan_notifications_total{channel="email",result="sent"} 0
quan_notifications_total{channel="sms",result="failed"} 0
quan_notifications_total{channel="sms",result="opted_out"} 1
quan_notifications_total{channel="sms",result="quiet_hours"} 0
quan_notifications_total{channel="sms",result="retried"} 1
quan_notifications_total{channel="sms",result="sent"} 2
`)
	names := []string{"quan_notifications_total", "quan_notification_possible_duplicates_total", "quan_notifications_queued"}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want.String()), names...); err != nil {
		t.Error(err)
	}
	st.err = errors.New("the store is down")
	if n, err := testutil.GatherAndCount(reg, "quan_notifications_queued"); err != nil || n != 0 {
		t.Errorf("a store that fails: %d series, %v; want the gauge left out", n, err)
	}
}
