package quan

import (
	"context"
	"iter"
	"slices"
)

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
