package prom

import (
	"context"
	"time"

	"github.com/quanhq/quan"
)

// notifyOps record the notification and contact stores' calls.
type notifyOps struct {
	recordNotifications, notificationOp, notificationCounts, failedNotifications, pendingNotifications, takeNotifications, finishNotifications, inbox, unreadCount, markRead, popups, ackPopup, deleteInApp, contactOp, contacts, updateContact, importContacts *op
}

func newNotifyOps(o func(string) *op) notifyOps {
	return notifyOps{
		recordNotifications:  o("RecordNotifications"),
		notificationOp:       o("Notification"),
		notificationCounts:   o("NotificationCounts"),
		failedNotifications:  o("FailedNotifications"),
		pendingNotifications: o("PendingNotifications"),
		takeNotifications:    o("TakeNotifications"),
		finishNotifications:  o("FinishNotifications"),
		inbox:                o("Inbox"),
		unreadCount:          o("UnreadCount"),
		markRead:             o("MarkRead"),
		popups:               o("Popups"),
		ackPopup:             o("AckPopup"),
		deleteInApp:          o("DeleteInApp"),
		contactOp:            o("Contact"),
		contacts:             o("Contacts"),
		updateContact:        o("UpdateContact"),
		importContacts:       o("ImportContacts"),
	}
}
func (s *store) RecordNotifications(ctx context.Context, now time.Time, ns []*quan.Notification) (_ int, err error) {
	defer s.recordNotifications.done(ctx, time.Now(), &err)
	return s.s.RecordNotifications(ctx, now, ns)
}

func (s *store) Notification(ctx context.Context, source string, user int64, ch quan.NotifyType) (_ *quan.Notification, err error) {
	defer s.notificationOp.done(ctx, time.Now(), &err)
	return s.s.Notification(ctx, source, user, ch)
}

func (s *store) NotificationCounts(ctx context.Context, source string) (_ []quan.NotificationCount, err error) {
	defer s.notificationCounts.done(ctx, time.Now(), &err)
	return s.s.NotificationCounts(ctx, source)
}

func (s *store) FailedNotifications(ctx context.Context, source string, ch quan.NotifyType, afterID int64, limit int) (_ []*quan.Notification, err error) {
	defer s.failedNotifications.done(ctx, time.Now(), &err)
	return s.s.FailedNotifications(ctx, source, ch, afterID, limit)
}

func (s *store) PendingNotifications(ctx context.Context, now time.Time) (_ map[quan.NotifyType]int64, err error) {
	defer s.pendingNotifications.done(ctx, time.Now(), &err)
	return s.s.PendingNotifications(ctx, now)
}

// Secret passes through untimed, like CodeKey: it is read once when the
// process wires its senders.
func (s *store) Secret(ctx context.Context, name string) ([]byte, error) {
	return s.s.Secret(ctx, name)
}

func (s *store) TakeNotifications(ctx context.Context, ch quan.NotifyType, owner string, now, lease time.Time, limit int) (_ []*quan.Notification, err error) {
	defer s.takeNotifications.done(ctx, time.Now(), &err)
	return s.s.TakeNotifications(ctx, ch, owner, now, lease, limit)
}

func (s *store) FinishNotifications(ctx context.Context, owner string, now time.Time, rs []quan.NotificationResult) (_ int, err error) {
	defer s.finishNotifications.done(ctx, time.Now(), &err)
	return s.s.FinishNotifications(ctx, owner, now, rs)
}

func (s *store) Inbox(ctx context.Context, f quan.InboxFilter) (_ []*quan.InboxEntry, _ int, err error) {
	defer s.inbox.done(ctx, time.Now(), &err)
	return s.s.Inbox(ctx, f)
}

func (s *store) UnreadCount(ctx context.Context, user int64) (_ int, err error) {
	defer s.unreadCount.done(ctx, time.Now(), &err)
	return s.s.UnreadCount(ctx, user)
}

func (s *store) MarkRead(ctx context.Context, user int64, ids []int64, now time.Time) (_ int, err error) {
	defer s.markRead.done(ctx, time.Now(), &err)
	return s.s.MarkRead(ctx, user, ids, now)
}

func (s *store) Popups(ctx context.Context, user int64, now time.Time) (_ []*quan.InboxEntry, err error) {
	defer s.popups.done(ctx, time.Now(), &err)
	return s.s.Popups(ctx, user, now)
}

func (s *store) AckPopup(ctx context.Context, user, id int64, now time.Time) (err error) {
	defer s.ackPopup.done(ctx, time.Now(), &err)
	return s.s.AckPopup(ctx, user, id, now)
}

func (s *store) DeleteInApp(ctx context.Context, before time.Time, limit int) (_ int, err error) {
	defer s.deleteInApp.done(ctx, time.Now(), &err)
	return s.s.DeleteInApp(ctx, before, limit)
}

func (s *store) Contact(ctx context.Context, user int64) (_ *quan.Contact, err error) {
	defer s.contactOp.done(ctx, time.Now(), &err)
	return s.s.Contact(ctx, user)
}

func (s *store) Contacts(ctx context.Context, users []int64) (_ map[int64]*quan.Contact, err error) {
	defer s.contacts.done(ctx, time.Now(), &err)
	return s.s.Contacts(ctx, users)
}

func (s *store) UpdateContact(ctx context.Context, user int64, now time.Time, fn func(*quan.Contact) error) (_ *quan.Contact, err error) {
	defer s.updateContact.done(ctx, time.Now(), &err)
	return s.s.UpdateContact(ctx, user, now, fn)
}

func (s *store) ImportContacts(ctx context.Context, now time.Time, rows []quan.ContactRow) (_ int, err error) {
	defer s.importContacts.done(ctx, time.Now(), &err)
	return s.s.ImportContacts(ctx, now, rows)
}
