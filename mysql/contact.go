package mysql

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
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
	return queryContact(ctx, s.db.db, user, "")
}

func queryContact(ctx context.Context, q rowQueryer, user int64, lock string) (*quan.Contact, error) {
	c, err := sqlrow.ScanContact(q.QueryRowContext(ctx, `SELECT `+contactColumns+` FROM contacts WHERE user_id = ?`+lock, user))
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
	return sqlrow.ContactsOf(ctx, s.db.db, users)
}

// UpdateContact implements quan.ContactStore: the row is read FOR
// UPDATE; two first writes of one user that deadlock on the gap are
// retried by inTx.
func (s *Store) UpdateContact(ctx context.Context, user int64, now time.Time, fn func(*quan.Contact) error) (_ *quan.Contact, err error) {
	defer s.db.unavailable(&err)
	var out *quan.Contact
	err = s.db.inTx(ctx, func(tx *sql.Tx) error {
		c, err := queryContact(ctx, tx, user, ` FOR UPDATE`)
		if err != nil {
			return err
		}
		if err := fn(c); err != nil {
			return err
		}
		c.UserID, c.UpdatedAt = user, now
		if _, err := tx.ExecContext(ctx, `INSERT INTO contacts (`+contactColumns+`) VALUES (?, ?, ?, ?, ?, ?)
			ON DUPLICATE KEY UPDATE phone = VALUES(phone), mail = VALUES(mail), lang = VALUES(lang),
				opt_out = VALUES(opt_out), updated_at = VALUES(updated_at)`,
			user, c.Phone, c.Mail, c.Lang, sqlrow.OptOutText(c.OptOut), utc(now)); err != nil {
			return fmt.Errorf("update contact of user %d: %w", user, err)
		}
		out = c
		return nil
	})
	return out, err
}

// contactImportBatch is the most rows one INSERT of ImportContacts
// carries: 5 placeholders a row, far under MySQL's 65,535.
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
	b.WriteString(` ON DUPLICATE KEY UPDATE
		phone = IF(VALUES(phone) = '', phone, VALUES(phone)),
		mail = IF(VALUES(mail) = '', mail, VALUES(mail)),
		updated_at = VALUES(updated_at)`)
	if withLang {
		b.WriteString(`, lang = VALUES(lang)`)
	}
	return b.String()
}

// ImportContacts implements quan.ContactStore: the rows with a language
// and those without go in statements of their own, so that a blank
// language keeps the stored one and a new contact without one gets zh.
// The rows are written in user order, so that two imports at once lock
// their users in the same order; a deadlock with a single update is
// retried by inTx.
func (s *Store) ImportContacts(ctx context.Context, now time.Time, rows []quan.ContactRow) (_ int, err error) {
	defer s.db.unavailable(&err)
	if len(rows) == 0 {
		return 0, nil
	}
	sorted := slices.Clone(rows)
	slices.SortFunc(sorted, func(a, b quan.ContactRow) int { return cmp.Compare(a.UserID, b.UserID) })
	withLang, noLang := sqlrow.SplitByLang(sorted)
	err = s.db.inTx(ctx, func(tx *sql.Tx) error {
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
					args = append(args, r.UserID, r.Phone, r.Mail, lang, utc(now))
				}
				if _, err := tx.ExecContext(ctx, importContactsSQL(len(part), group.withLang), args...); err != nil {
					return fmt.Errorf("import contacts: %w", err)
				}
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return len(rows), nil
}
