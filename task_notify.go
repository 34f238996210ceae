package quan

import (
	"context"
	"io"
	"iter"
	"slices"
)

// TaskNotifications is how far the notifications of a task are: its
// channels and its messages' counts by channel and status, as the chunks
// recorded them and the dispatchers moved them on.
type TaskNotifications struct {
	Channels []NotifyType `json:"channels"`
	// ByChannel has an entry for every channel of the task, zeros until
	// its first chunk issues.
	ByChannel map[NotifyType]ChannelCounts `json:"byChannel"`
	// Counts are the store's counts as they are (NotificationCounts).
	Counts []NotificationCount `json:"counts"`
}

// ChannelCounts are a task's messages on one channel by status. An inbox
// or popup message is one broadcast that every holder of a coupon of the
// task sees: it counts once, and Recipients says how many see it.
type ChannelCounts struct {
	Queued     int64 `json:"queued"`
	Deferred   int64 `json:"deferred"`
	Sent       int64 `json:"sent"`
	Failed     int64 `json:"failed"`
	Total      int64 `json:"total"`
	Broadcast  bool  `json:"broadcast,omitempty"`
	Recipients int64 `json:"recipients"` // email, SMS: Total; inbox, popup: the coupons issued
}

// NotificationProgress returns the notification progress of task id if
// the caller's shop owns it, else ErrNotFound. A task that notifies on no
// channel has an empty one.
func (s *TaskService) NotificationProgress(ctx context.Context, who Identity, id int64) (*TaskNotifications, error) {
	t, err := s.Get(ctx, who, id)
	if err != nil {
		return nil, err
	}
	return s.progress(ctx, t)
}

// progress counts t's notifications.
func (s *TaskService) progress(ctx context.Context, t *Task) (*TaskNotifications, error) {
	out := &TaskNotifications{Channels: slices.Clone(t.Notify), ByChannel: map[NotifyType]ChannelCounts{}, Counts: []NotificationCount{}}
	if out.Channels == nil {
		out.Channels = []NotifyType{}
	}
	for _, ch := range t.Notify {
		out.ByChannel[ch] = ChannelCounts{Broadcast: ch == NotifyInbox || ch == NotifyPopup}
	}
	if len(t.Notify) == 0 || s.Outbox == nil {
		return out, nil
	}
	cs, err := s.Outbox.NotificationCounts(ctx, TaskSource(t.ID))
	if err != nil {
		return nil, err
	}
	out.Counts = cs
	for _, c := range cs {
		k := out.ByChannel[c.Channel]
		switch c.Status {
		case NotificationQueued:
			k.Queued += c.Count
		case NotificationDeferred:
			k.Deferred += c.Count
		case NotificationSent:
			k.Sent += c.Count
		case NotificationFailed:
			k.Failed += c.Count
		}
		k.Total += c.Count
		out.ByChannel[c.Channel] = k
	}
	for ch, k := range out.ByChannel {
		k.Recipients = k.Total
		if k.Broadcast && k.Total > 0 {
			k.Recipients = t.Counts.Issued
		}
		out.ByChannel[ch] = k
	}
	return out, nil
}

// TaskNotificationsFor returns the notification progress of t, which the
// caller read with Get; nil if the task notifies on no channel.
func (s *TaskService) TaskNotificationsFor(ctx context.Context, t *Task) (*TaskNotifications, error) {
	if len(t.Notify) == 0 {
		return nil, nil
	}
	return s.progress(ctx, t)
}

// notificationPage is how many failed notifications FailedNotifications
// reads at a time.
const notificationPage = 10_000

// FailedNotifications returns the failed notifications of task id, if
// the caller's shop owns it (else ErrNotFound), channel by channel in the
// task's order, each in the order they were recorded, a page at a time;
// an error ends the sequence.
func (s *TaskService) FailedNotifications(ctx context.Context, who Identity, id int64) (iter.Seq2[*Notification, error], error) {
	t, err := s.Get(ctx, who, id)
	if err != nil {
		return nil, err
	}
	return func(yield func(*Notification, error) bool) {
		if s.Outbox == nil {
			return
		}
		for _, ch := range t.Notify {
			if ch != NotifyEmail && ch != NotifySMS {
				continue // broadcasts do not fail
			}
			var after int64
			for {
				page, err := s.Outbox.FailedNotifications(ctx, TaskSource(t.ID), ch, after, notificationPage)
				if err != nil {
					yield(nil, err)
					return
				}
				for _, n := range page {
					if !yield(n, nil) {
						return
					}
					after = n.ID
				}
				if len(page) < notificationPage {
					break
				}
			}
		}
	}, nil
}

// NotificationFailuresExport writes a task's failed notifications to w
// as a spreadsheet file, headed by NotificationFailureColumns, the
// addresses masked (MaskAddress), streamed row by row. It returns the
// first error of ns, or ctx's when ctx ends; w holds a partial file then.
type NotificationFailuresExport interface {
	Write(ctx context.Context, w io.Writer, ns iter.Seq2[*Notification, error]) error
}

// NotificationFailureColumns heads the columns of a task's failed
// notifications report: the user, the channel, the address masked
// (MaskAddress), the reason's code and what it means.
func NotificationFailureColumns() []string {
	return []string{"用户ID User ID", "渠道 Channel", "地址 Address", "原因 Reason", "说明 Details"}
}

// DescribeReason says what the reason a notification failed means.
func DescribeReason(reason string) string {
	switch reason {
	case ReasonNoContact:
		return "no address: neither the file's row nor the user's contact on file has one for the channel"
	case ReasonInvalidContact:
		return "the address is not a mobile number (1[3-9] and 9 digits, or +country code) or a mail address"
	case ReasonOptedOut:
		return "the user opted out of the channel"
	}
	return reason
}
