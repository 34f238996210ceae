package notify

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/quanhq/quan"
)

// Reminders sends the reminders templates promise: expiry-soon
// reminders of the coupons users hold (Template.RemindBefore), and opening
// reminders (预约) to the users who asked for one before a template opens
// for claims. Reminders are recorded as notifications, which the inbox
// shows and the Dispatcher sends.
type Reminders struct {
	Store     quan.ReminderStore
	Templates quan.TemplateStore
	Now       quan.Clock   // nil is time.Now
	Logger    *slog.Logger // nil discards
}

// Remind records every reminder due now, in transactions of up to batch
// reminders each, and returns how many expiry and opening reminders it
// took. The sweeper calls it; two processes calling it at once share the
// work and remind nobody twice.
func (s *Reminders) Remind(ctx context.Context, batch int) (expiring, opening int, err error) {
	if batch <= 0 {
		return 0, 0, fmt.Errorf("remind: batch %d: want at least 1", batch)
	}
	now := s.Now.UTC()
	for {
		n, err := s.Store.RemindExpiring(ctx, now, batch, expiryReminders(now))
		expiring += n
		if err != nil {
			return expiring, opening, fmt.Errorf("expiry reminders: %w", err)
		}
		if n < batch {
			break
		}
	}
	for {
		n, err := s.Store.RemindOpening(ctx, now, batch, openingReminders)
		opening += n
		if err != nil {
			return expiring, opening, fmt.Errorf("opening reminders: %w", err)
		}
		if n < batch {
			break
		}
	}
	return expiring, opening, nil
}

// expiryReminders makes the expiry reminders of coupons of t: one per
// coupon and channel of t.RemindChannels, keyed "expiring:coupon:ID". A
// popup is not shown once the coupon ended.
func expiryReminders(now time.Time) quan.RemindFunc {
	return func(t *quan.Template, due []quan.DueReminder) ([]*quan.Notification, error) {
		out := make([]*quan.Notification, 0, len(due)*len(t.RemindChannels))
		for _, d := range due {
			src := "expiring:coupon:" + strconv.FormatInt(d.CouponID, 10)
			vars := messageVarsOf(t)
			vars.ValidUntil = d.ValidEnd
			for _, ch := range t.RemindChannels {
				out = append(out, reminder(src, quan.MessageExpiring, ch, d, vars, d.ValidEnd))
			}
		}
		return out, nil
	}
}

// openingReminders makes the opening reminders of t's subscribers: one per
// user and channel of t.OpeningChannels, keyed "opening:template:ID". A
// popup is not shown once the template stops issuing.
func openingReminders(t *quan.Template, due []quan.DueReminder) ([]*quan.Notification, error) {
	chans := t.OpeningChannels()
	src := "opening:template:" + strconv.FormatInt(t.ID, 10)
	vars := messageVarsOf(t)
	vars.OpensAt = t.IssueStart
	out := make([]*quan.Notification, 0, len(due)*len(chans))
	for _, d := range due {
		for _, ch := range chans {
			out = append(out, reminder(src, quan.MessageOpening, ch, d, vars, t.IssueEnd))
		}
	}
	return out, nil
}

// reminder is the notification of d on ch. Email and SMS go to the
// contact on file: none is failed no_contact, as for a distribution.
func reminder(src string, kind quan.MessageKind, ch quan.NotifyType, d quan.DueReminder, vars quan.MessageVars, until time.Time) *quan.Notification {
	lang := d.Contact.Lang
	if lang == "" {
		lang = quan.LangZH
	}
	n := &quan.Notification{Source: src, UserID: d.UserID, Channel: ch, Kind: kind, Lang: lang, Vars: vars}
	switch ch {
	case quan.NotifyPopup:
		n.ExpiresAt = until
	case quan.NotifyEmail, quan.NotifySMS:
		addr := d.Contact.Mail
		if ch == quan.NotifySMS {
			addr = d.Contact.Phone
		}
		var problem quan.ContactProblem
		if n.Address, problem = quan.PickContact(ch, addr); problem != "" {
			n.Status, n.Reason = quan.NotificationFailed, string(problem)
		}
	}
	return n
}

// messageVarsOf fills what a message says of t's offer.
func messageVarsOf(t *quan.Template) quan.MessageVars {
	v := quan.MessageVars{TemplateName: t.Name, AmountOff: t.Rule.Amount, Threshold: t.Rule.Threshold}
	switch t.Kind {
	case quan.KindDiscount:
		v.AmountOff, v.Rate = 0, t.Rule.Rate
	case quan.KindStep:
		v.Threshold = t.Rule.Step
	}
	return v
}

// subscriber returns who's user id, or ErrForbidden if who is not a user.
func subscriber(who quan.Identity) (int64, error) {
	switch {
	case who.Role == "":
		return 0, quan.ErrUnauthorized
	case who.Role != quan.RoleUser || who.UserID <= 0:
		return 0, quan.Errorf(quan.EFORBIDDEN, "reminders are a user's: this needs a user token")
	}
	return who.UserID, nil
}

// Subscribe asks for who (a user) to be reminded when template id opens
// for claims, and reports whether the request is new: asking again
// changes nothing. ErrNotFound for a draft or no template;
// EALREADYOPEN once the issue window opened; EENDED once it closed or the
// template ended.
func (s *Reminders) Subscribe(ctx context.Context, who quan.Identity, id int64) (*quan.SubscriptionView, bool, error) {
	user, err := subscriber(who)
	if err != nil {
		return nil, false, err
	}
	t, err := s.Templates.Template(ctx, quan.AnyShop, id)
	if err != nil {
		return nil, false, err
	}
	now := s.Now.UTC()
	switch {
	case t.Status == quan.TemplateDraft:
		return nil, false, quan.Errorf(quan.ENOTFOUND, "template %d: not found", id)
	case t.Status == quan.TemplateEnded || !now.Before(t.IssueEnd):
		return nil, false, quan.Errorf(quan.EENDED, "template %d issues no more: there is nothing to be reminded of", id)
	case !now.Before(t.IssueStart):
		return nil, false, quan.Errorf(quan.EALREADYOPEN, "template %d opened for claims at %s: claim it now", id, t.IssueStart.Format(time.RFC3339))
	}
	sub := &quan.Subscription{TemplateID: id, UserID: user, CreatedAt: now}
	created, err := s.Store.Subscribe(ctx, sub)
	if err != nil {
		return nil, false, fmt.Errorf("subscribe user %d to template %d: %w", user, id, err)
	}
	return &quan.SubscriptionView{Subscription: *sub, Name: t.Name, IssueStart: t.IssueStart,
		RemindAt: t.IssueStart.Add(-t.OpeningLead())}, created, nil
}

// Unsubscribe cancels who's request to be reminded of template id.
// Cancelling a request never made, or already cancelled, is no error.
func (s *Reminders) Unsubscribe(ctx context.Context, who quan.Identity, id int64) error {
	user, err := subscriber(who)
	if err != nil {
		return err
	}
	if _, err := s.Store.Unsubscribe(ctx, id, user); err != nil {
		return fmt.Errorf("unsubscribe user %d from template %d: %w", user, id, err)
	}
	return nil
}

// Subscriptions lists who's requests to be reminded, the latest
// IssueStart first.
func (s *Reminders) Subscriptions(ctx context.Context, who quan.Identity) ([]*quan.SubscriptionView, error) {
	user, err := subscriber(who)
	if err != nil {
		return nil, err
	}
	return s.Store.Subscriptions(ctx, user)
}
