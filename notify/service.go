package notify

import (
	"context"
	"fmt"
	"time"

	"github.com/quanhq/quan"
)

// DefaultInboxRetention is how long inbox and popup entries are kept.
const DefaultInboxRetention = 90 * 24 * time.Hour

// Service is what users see of their notifications — the inbox and
// popups, rendered in their language — and their contact and opt-outs.
type Service struct {
	Store    quan.NotificationStore
	Contacts quan.ContactStore
	Texts    quan.Texts
	// UnsubscribeKey checks the tokens of mails' unsubscribe links
	// (Unsubscribe); nil refuses every token.
	UnsubscribeKey UnsubscribeKey
	Now            quan.Clock // nil is time.Now

	// Files keeps an uploaded contacts file while ImportContacts reads
	// it, and OpenRows reads it; either nil refuses imports.
	Files    quan.FileStore
	OpenRows func(path string) (quan.RowReader, error)
	// MaxFileSize bounds a contacts file; 0 means DefaultMaxFileSize.
	MaxFileSize int64
	// MaxImportRows bounds a contacts file's data rows; 0 means
	// DefaultMaxContactRows.
	MaxImportRows int64
}

// contactOwner returns the user whose contact who may see or change: its own
// (user 0, or its own id) for a user, any for an admin.
func contactOwner(who quan.Identity, user int64) (int64, error) {
	switch {
	case who.Role == "":
		return 0, quan.ErrUnauthorized
	case who.Role == quan.RoleUser && (user == 0 || user == who.UserID):
		return who.UserID, nil
	case who.Role == quan.RoleAdmin && user > 0:
		return user, nil
	case who.Role == quan.RoleAdmin:
		return 0, quan.Errorf(quan.EFORBIDDEN, "an admin has no contact of its own: use /users/{id}/contact")
	}
	return 0, quan.Errorf(quan.EFORBIDDEN, "only the user or an admin may see or change a user's contact")
}

// inboxUser returns who's user id, or ErrForbidden if who is not a user.
func inboxUser(who quan.Identity) (int64, error) {
	switch {
	case who.Role == "":
		return 0, quan.ErrUnauthorized
	case who.Role != quan.RoleUser:
		return 0, quan.Errorf(quan.EFORBIDDEN, "the inbox is a user's: this needs a user token")
	}
	return who.UserID, nil
}

// Contact returns the contact of user (0: who's own).
func (s *Service) Contact(ctx context.Context, who quan.Identity, user int64) (*quan.Contact, error) {
	u, err := contactOwner(who, user)
	if err != nil {
		return nil, err
	}
	return s.Contacts.Contact(ctx, u)
}

// SetContact replaces the contact of user (0: who's own) with c: its
// phone, mail, language and opt-outs. An invalid phone or mail is
// EINVALID naming the field; nothing is saved then.
func (s *Service) SetContact(ctx context.Context, who quan.Identity, user int64, c quan.Contact) (*quan.Contact, error) {
	u, err := contactOwner(who, user)
	if err != nil {
		return nil, err
	}
	if err := c.Normalize(); err != nil {
		return nil, err
	}
	return s.Contacts.UpdateContact(ctx, u, s.Now.UTC(), func(old *quan.Contact) error {
		old.Phone, old.Mail, old.Lang, old.OptOut = c.Phone, c.Mail, c.Lang, c.OptOut
		return nil
	})
}

// Inbox returns a page of who's inbox, newest first, and the number of
// all that match; EINVALID for an offset or a limit out of range.
func (s *Service) Inbox(ctx context.Context, who quan.Identity, f quan.InboxFilter) ([]*quan.Notice, int, error) {
	u, err := inboxUser(who)
	if err != nil {
		return nil, 0, err
	}
	f.UserID = u
	if err := f.Validate(); err != nil {
		return nil, 0, err
	}
	es, total, err := s.Store.Inbox(ctx, f)
	if err != nil {
		return nil, 0, err
	}
	ms, err := s.render(ctx, u, es)
	return ms, total, err
}

// UnreadCount is how many of who's inbox messages are unread.
func (s *Service) UnreadCount(ctx context.Context, who quan.Identity) (int, error) {
	u, err := inboxUser(who)
	if err != nil {
		return 0, err
	}
	return s.Store.UnreadCount(ctx, u)
}

// MarkRead marks who's inbox messages ids read, or all of them, and
// returns how many it marked (ids not in the inbox, or read, count none).
func (s *Service) MarkRead(ctx context.Context, who quan.Identity, ids []int64, all bool) (int, error) {
	u, err := inboxUser(who)
	if err != nil {
		return 0, err
	}
	switch {
	case all && len(ids) > 0:
		return 0, quan.Errorf(quan.EINVALID, "give ids or all, not both")
	case all:
		ids = nil
	case len(ids) == 0:
		return 0, quan.Errorf(quan.EINVALID, "give the ids to mark read, or all: true")
	case len(ids) > quan.MaxPageSize*10:
		return 0, quan.Errorf(quan.EINVALID, "at most %d ids at once", quan.MaxPageSize*10)
	}
	return s.Store.MarkRead(ctx, u, ids, s.Now.UTC())
}

// Popups returns who's popups not shown yet, newest first, marking none;
// none if who opted out of popups.
func (s *Service) Popups(ctx context.Context, who quan.Identity) ([]*quan.Notice, error) {
	u, err := inboxUser(who)
	if err != nil {
		return nil, err
	}
	c, err := s.Contacts.Contact(ctx, u)
	if err != nil {
		return nil, err
	}
	if c.OptedOut(quan.NotifyPopup) {
		return []*quan.Notice{}, nil
	}
	es, err := s.Store.Popups(ctx, u, s.Now.UTC())
	if err != nil {
		return nil, err
	}
	return s.renderIn(c.Lang, es)
}

// AckPopup marks popup id shown to who. ErrNotFound if who has no such
// popup.
func (s *Service) AckPopup(ctx context.Context, who quan.Identity, id int64) error {
	u, err := inboxUser(who)
	if err != nil {
		return err
	}
	return s.Store.AckPopup(ctx, u, id, s.Now.UTC())
}

// Sweep deletes inbox and popup entries older than retention, batch rows
// at a time, until none is left, and returns how many rows it deleted.
func (s *Service) Sweep(ctx context.Context, retention time.Duration, batch int) (int, error) {
	if retention <= 0 {
		return 0, nil
	}
	before, total := s.Now.UTC().Add(-retention), 0
	for ctx.Err() == nil {
		n, err := s.Store.DeleteInApp(ctx, before, batch)
		total += n
		if err != nil || n == 0 {
			return total, err
		}
	}
	return total, ctx.Err()
}

func (s *Service) render(ctx context.Context, user int64, es []*quan.InboxEntry) ([]*quan.Notice, error) {
	c, err := s.Contacts.Contact(ctx, user)
	if err != nil {
		return nil, err
	}
	return s.renderIn(c.Lang, es)
}

// renderIn renders entries in the user's language; an entry recorded in
// a language of its own keeps it.
func (s *Service) renderIn(lang quan.Lang, es []*quan.InboxEntry) ([]*quan.Notice, error) {
	out := make([]*quan.Notice, len(es))
	for i, e := range es {
		l := lang
		if e.Lang != "" {
			l = e.Lang
		}
		r, err := s.Texts.Render(e.Kind, e.Channel, l, e.Vars)
		if err != nil {
			return nil, fmt.Errorf("render message %d: %w", e.ID, err)
		}
		out[i] = &quan.Notice{ID: e.ID, Channel: e.Channel, Kind: e.Kind, Subject: r.Subject, Text: r.Text, Params: r.Params,
			TaskID: e.TaskID, CreatedAt: e.CreatedAt, ExpiresAt: e.ExpiresAt, Read: !e.MarkedAt.IsZero(), ReadAt: e.MarkedAt}
	}
	return out, nil
}
