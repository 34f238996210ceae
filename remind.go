package quan

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Reminder limits and defaults.
const (
	// DefaultRemindLead is how long before a template opens the users who
	// asked are reminded, when the template says nothing.
	DefaultRemindLead = Duration(5 * time.Minute)
	// MaxRemindLead is the longest lead a template may ask for.
	MaxRemindLead = Duration(7 * 24 * time.Hour)
)

// validateReminders checks RemindBefore, RemindChannels and RemindLead.
func (s *TemplateSpec) validateReminders(v *Validation) {
	whole := func(field string, d Duration) bool {
		if time.Duration(d)%time.Second != 0 {
			v.Add(field, fmt.Sprintf("%s: whole seconds only", d))
			return false
		}
		return true
	}
	switch d := s.RemindBefore; {
	case d < 0:
		v.Add("remindBefore", "must be positive (or 0: no expiry reminder)")
	case d == 0:
	case !whole("remindBefore", d):
	default:
		if n := s.validityLength(); n > 0 && time.Duration(d) >= n {
			v.Add("remindBefore", fmt.Sprintf("%s must be shorter than the coupons' validity of %s", d, Duration(n)))
		}
		if len(s.RemindChannels) == 0 {
			v.Add("remindChannels", "name at least one channel (inbox, popup, email, sms) for the expiry reminders")
		}
	}
	seen := map[NotifyType]bool{}
	for i, ch := range s.RemindChannels {
		field := fmt.Sprintf("remindChannels[%d]", i)
		switch {
		case ch != NotifyInbox && ch != NotifyPopup && ch != NotifyEmail && ch != NotifySMS:
			v.Add(field, fmt.Sprintf("%q is not a channel: use inbox, popup, email or sms", ch))
		case seen[ch]:
			v.Add(field, fmt.Sprintf("%q is listed twice", ch))
		}
		seen[ch] = true
	}
	switch d := s.RemindLead; {
	case d < 0:
		v.Add("remindLead", "must be positive (or absent: 5m)")
	case d > MaxRemindLead:
		v.Add("remindLead", fmt.Sprintf("must be at most %s", MaxRemindLead))
	default:
		whole("remindLead", d)
	}
}

// validityLength is how long the coupons of s are valid at most (0 if the
// validity is itself invalid).
func (s *TemplateSpec) validityLength() time.Duration {
	switch s.Validity.Kind {
	case ValidFixed:
		return s.Validity.End.Sub(s.Validity.Start)
	case ValidRelative:
		return time.Duration(s.Validity.Hours) * time.Hour
	}
	return 0
}

// OpeningLead is how long before IssueStart subscribers are reminded.
func (s *TemplateSpec) OpeningLead() time.Duration {
	if s.RemindLead <= 0 {
		return time.Duration(DefaultRemindLead)
	}
	return time.Duration(s.RemindLead)
}

// OpeningChannels are the channels of the template's opening reminders:
// inbox and popup always — the user asked in the app — and email and SMS
// when RemindChannels lists them, so a merchant who pays for SMS chooses
// it.
func (s *TemplateSpec) OpeningChannels() []NotifyType {
	out := []NotifyType{NotifyInbox, NotifyPopup}
	for _, ch := range []NotifyType{NotifyEmail, NotifySMS} {
		if slices.Contains(s.RemindChannels, ch) {
			out = append(out, ch)
		}
	}
	return out
}

// Subscription is a user's request to be reminded when a template opens
// for claims (预约).
type Subscription struct {
	TemplateID int64     `json:"templateId"`
	UserID     int64     `json:"-"`
	CreatedAt  time.Time `json:"createdAt"`
	// NotifiedAt is when the reminder was recorded; zero until then.
	NotifiedAt time.Time `json:"notifiedAt,omitzero"`
}

// SubscriptionView is a subscription as its user lists it.
type SubscriptionView struct {
	Subscription
	Name       string    `json:"name"`
	IssueStart time.Time `json:"issueStart"`
	// RemindAt is when the reminder is due: IssueStart less the lead.
	RemindAt time.Time `json:"remindAt"`
}

// DueReminder is one reminder a store found due: a coupon expiring
// (CouponID, ValidEnd) or a subscriber of a template opening (CouponID 0),
// with its user's contact on file.
type DueReminder struct {
	UserID   int64
	CouponID int64
	ValidEnd time.Time
	Contact  Contact // empty (no phone, no mail, Lang "") if none on file
}

// RemindFunc turns the reminders due of template t into the notifications
// to record. It runs inside the store's transaction: it must be quick and
// must not call the store.
type RemindFunc func(t *Template, due []DueReminder) ([]*Notification, error)

// ReminderStore finds the reminders due and keeps the subscriptions.
//
// Each Remind method takes what is due in one transaction: it reads up to
// limit reminders along an index of what is still owed, calls fn once per
// template with them, records the notifications fn returns (as
// NotificationStore.RecordNotifications does) and marks the reminders done,
// so that the next call takes the next ones and nothing is reminded
// twice. It returns how many reminders it took: fewer than limit when no
// more are due. If fn fails, nothing is written.
type ReminderStore interface {
	// RemindExpiring takes the coupons due an expiry reminder at now: of
	// templates with a RemindBefore, available, ending after now and no
	// later than now + RemindBefore, and not reminded before. A coupon
	// locked at its moment is reminded if it becomes available again
	// before it ends.
	RemindExpiring(ctx context.Context, now time.Time, limit int, fn RemindFunc) (int, error)

	// RemindOpening takes the subscriptions due at now: of active
	// templates whose IssueStart less OpeningLead has come and whose
	// IssueEnd has not, not notified before. Subscriptions of a paused
	// template wait for it to resume.
	RemindOpening(ctx context.Context, now time.Time, limit int, fn RemindFunc) (int, error)

	// Subscribe records sub and reports whether it is new; subscribing
	// again leaves the first one as it was, and sets sub to it.
	Subscribe(ctx context.Context, sub *Subscription) (bool, error)

	// Unsubscribe deletes the subscription of user to template and
	// reports whether there was one.
	Unsubscribe(ctx context.Context, template, user int64) (bool, error)

	// Subscriptions returns the subscriptions of user, the latest
	// IssueStart first, at most MaxPageSize of them.
	Subscriptions(ctx context.Context, user int64) ([]*SubscriptionView, error)
}
