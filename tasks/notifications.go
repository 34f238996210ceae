package tasks

import (
	"context"
	"iter"
	"slices"

	"github.com/quanhq/quan"
)

// NotificationProgress returns the notification progress of task id if
// the caller's shop owns it, else ErrNotFound. A task that notifies on no
// channel has an empty one.
func (s *Service) NotificationProgress(ctx context.Context, who quan.Identity, id int64) (*quan.TaskNotifications, error) {
	t, err := s.Get(ctx, who, id)
	if err != nil {
		return nil, err
	}
	return s.progress(ctx, t)
}

// progress counts t's notifications.
func (s *Service) progress(ctx context.Context, t *quan.Task) (*quan.TaskNotifications, error) {
	out := &quan.TaskNotifications{Channels: slices.Clone(t.Notify), ByChannel: map[quan.NotifyType]quan.ChannelCounts{}, Counts: []quan.NotificationCount{}}
	if out.Channels == nil {
		out.Channels = []quan.NotifyType{}
	}
	for _, ch := range t.Notify {
		out.ByChannel[ch] = quan.ChannelCounts{Broadcast: ch == quan.NotifyInbox || ch == quan.NotifyPopup}
	}
	if len(t.Notify) == 0 || s.Outbox == nil {
		return out, nil
	}
	cs, err := s.Outbox.NotificationCounts(ctx, quan.TaskSource(t.ID))
	if err != nil {
		return nil, err
	}
	out.Counts = cs
	for _, c := range cs {
		k := out.ByChannel[c.Channel]
		switch c.Status {
		case quan.NotificationQueued:
			k.Queued += c.Count
		case quan.NotificationDeferred:
			k.Deferred += c.Count
		case quan.NotificationSent:
			k.Sent += c.Count
		case quan.NotificationFailed:
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
func (s *Service) TaskNotificationsFor(ctx context.Context, t *quan.Task) (*quan.TaskNotifications, error) {
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
func (s *Service) FailedNotifications(ctx context.Context, who quan.Identity, id int64) (iter.Seq2[*quan.Notification, error], error) {
	t, err := s.Get(ctx, who, id)
	if err != nil {
		return nil, err
	}
	return func(yield func(*quan.Notification, error) bool) {
		if s.Outbox == nil {
			return
		}
		for _, ch := range t.Notify {
			if ch != quan.NotifyEmail && ch != quan.NotifySMS {
				continue // broadcasts do not fail
			}
			var after int64
			for {
				page, err := s.Outbox.FailedNotifications(ctx, quan.TaskSource(t.ID), ch, after, notificationPage)
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
