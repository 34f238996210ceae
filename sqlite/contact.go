package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/sqlrow"
)

var _ quan.ContactStore = (*Store)(nil)

const contactColumns = sqlrow.ContactColumns

// Contact implements quan.ContactStore.
func (s *Store) Contact(ctx context.Context, user int64) (_ *quan.Contact, err error) {
	defer s.db.unavailable(&err)
	return queryContact(ctx, s.db.read, user)
}

func queryContact(ctx context.Context, q rowQueryer, user int64) (*quan.Contact, error) {
	c, err := sqlrow.ScanContact(q.QueryRowContext(ctx, `SELECT `+contactColumns+` FROM contacts WHERE user_id = ?`, user))
	if errors.Is(err, sql.ErrNoRows) {
		return sqlrow.EmptyContact(user), nil
	}
	if err != nil {
		return nil, fmt.Errorf("read contact of user %d: %w", user, err)
	}
	return c, nil
}

// Contacts implements quan.ContactStore.
func (s *Store) Contacts(ctx context.Context, users []int64) (_ map[int64]*quan.Contact, err error) {
	defer s.db.unavailable(&err)
	return sqlrow.ContactsOf(ctx, s.db.read, users)
}

// UpdateContact implements quan.ContactStore. The write transaction is
// the lock.
func (s *Store) UpdateContact(ctx context.Context, user int64, now time.Time, fn func(*quan.Contact) error) (_ *quan.Contact, err error) {
	defer s.db.unavailable(&err)
	tx, err := s.db.write.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("update contact of user %d: %w", user, err)
	}
	defer tx.Rollback()
	c, err := queryContact(ctx, tx, user)
	if err != nil {
		return nil, err
	}
	if err := fn(c); err != nil {
		return nil, err
	}
	c.UserID, c.UpdatedAt = user, now
	if _, err := tx.ExecContext(ctx, `INSERT INTO contacts (`+contactColumns+`) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (user_id) DO UPDATE SET phone = excluded.phone, mail = excluded.mail, lang = excluded.lang,
			opt_out = excluded.opt_out, updated_at = excluded.updated_at`,
		user, c.Phone, c.Mail, c.Lang, sqlrow.OptOutText(c.OptOut), micros(now)); err != nil {
		return nil, fmt.Errorf("update contact of user %d: %w", user, err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("update contact of user %d: commit: %w", user, err)
	}
	return c, nil
}

// contactImportBatch is the most rows one INSERT of ImportContacts
// carries: 5 parameters a row, well under SQLite's 32,766.
const contactImportBatch = 1000

// importContactsSQL inserts n contacts, or, for a user with one on file,
// sets the phone and mail that are not blank (and the language, if
// withLang) and leaves the opt-outs be.
func importContactsSQL(n int, withLang bool) string {
	var b strings.Builder
	b.WriteString(`INSERT INTO contacts (` + contactColumns + `) VALUES `)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(`(?, ?, ?, ?, '', ?)`)
	}
	b.WriteString(` ON CONFLICT (user_id) DO UPDATE SET
		phone = CASE excluded.phone WHEN '' THEN contacts.phone ELSE excluded.phone END,
		mail = CASE excluded.mail WHEN '' THEN contacts.mail ELSE excluded.mail END,
		updated_at = excluded.updated_at`)
	if withLang {
		b.WriteString(`, lang = excluded.lang`)
	}
	return b.String()
}

// ImportContacts implements quan.ContactStore: the rows with a language
// and those without go in statements of their own, so that a blank
// language keeps the stored one and a new contact without one gets zh.
func (s *Store) ImportContacts(ctx context.Context, now time.Time, rows []quan.ContactRow) (_ int, err error) {
	defer s.db.unavailable(&err)
	if len(rows) == 0 {
		return 0, nil
	}
	tx, err := s.db.write.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("import contacts: %w", err)
	}
	defer tx.Rollback()
	withLang, noLang := sqlrow.SplitByLang(rows)
	for _, group := range []struct {
		rows     []quan.ContactRow
		withLang bool
	}{{withLang, true}, {noLang, false}} {
		for start := 0; start < len(group.rows); start += contactImportBatch {
			part := group.rows[start:min(start+contactImportBatch, len(group.rows))]
			args := make([]any, 0, 5*len(part))
			for _, r := range part {
				lang := r.Lang
				if lang == "" {
					lang = quan.LangZH // a new contact's; an old one keeps its own
				}
				args = append(args, r.UserID, r.Phone, r.Mail, lang, micros(now))
			}
			if _, err := tx.ExecContext(ctx, importContactsSQL(len(part), group.withLang), args...); err != nil {
				return 0, fmt.Errorf("import contacts: %w", err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("import contacts: commit: %w", err)
	}
	return len(rows), nil
}
