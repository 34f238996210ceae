package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/sqlrow"
)

var _ quan.ReminderStore = (*Store)(nil)

// RemindExpiring implements quan.ReminderStore in one transaction, one
// template at a time, its coupons along coupons_remind_due. The coupons
// are picked FOR UPDATE SKIP LOCKED: two sweepers take different ones, and
// a coupon an order holds is left for the next sweep.
func (s *Store) RemindExpiring(ctx context.Context, now time.Time, limit int, fn quan.RemindFunc) (_ int, err error) {
	defer s.db.unavailable(&err)
	return s.remind(ctx, now, limit, fn, "expiry reminders", func(tx *sql.Tx) ([]*quan.Template, error) {
		return sqlrow.Query(ctx, tx, "templates with expiry reminders", sqlrow.ScanTemplate, `SELECT `+templateColumns+` FROM templates
			WHERE remind_before > 0 AND issue_end > ? ORDER BY id`, utc(now))
	}, func(tx *sql.Tx, t *quan.Template, left int) ([]quan.DueReminder, error) {
		return sqlrow.Query(ctx, tx, "coupons due a reminder", sqlrow.ScanDue, `SELECT user_id, id, valid_end, NULL, NULL, NULL
			FROM coupons FORCE INDEX (coupons_remind_due)
			WHERE template_id = ? AND status = 'available' AND reminded_at IS NULL AND valid_end > ? AND valid_end <= ?
			ORDER BY valid_end LIMIT ? FOR UPDATE SKIP LOCKED`,
			t.ID, utc(now), utc(now.Add(time.Duration(t.RemindBefore))), left)
	}, func(tx *sql.Tx, t *quan.Template, due []quan.DueReminder) error {
		ids := make([]int64, len(due))
		for i, d := range due {
			ids[i] = d.CouponID
		}
		slices.Sort(ids)
		for part := range slices.Chunk(ids, claimBatch) {
			if _, err := tx.ExecContext(ctx, `UPDATE coupons SET reminded_at = ? WHERE id IN (`+sqlrow.Params(len(part))+`)`,
				sqlrow.Args(utc(now), part)...); err != nil {
				return err
			}
		}
		return nil
	})
}

// RemindOpening implements quan.ReminderStore in one transaction, one
// template at a time, its subscribers along template_reminders_due,
// picked FOR UPDATE SKIP LOCKED.
func (s *Store) RemindOpening(ctx context.Context, now time.Time, limit int, fn quan.RemindFunc) (_ int, err error) {
	defer s.db.unavailable(&err)
	lead := int64(time.Duration(quan.DefaultRemindLead) / time.Second)
	return s.remind(ctx, now, limit, fn, "opening reminders", func(tx *sql.Tx) ([]*quan.Template, error) {
		return sqlrow.Query(ctx, tx, "templates opening", sqlrow.ScanTemplate, `SELECT `+templateColumns+` FROM templates t
			WHERE status = 'active' AND issue_end > ?
				AND issue_start <= ? + INTERVAL (CASE WHEN remind_lead > 0 THEN remind_lead ELSE ? END) SECOND
				AND EXISTS (SELECT 1 FROM template_reminders r WHERE r.template_id = t.id AND r.notified_at IS NULL)
			ORDER BY id`, utc(now), utc(now), lead)
	}, func(tx *sql.Tx, t *quan.Template, left int) ([]quan.DueReminder, error) {
		return sqlrow.Query(ctx, tx, "subscribers due a reminder", sqlrow.ScanDue, `SELECT user_id, NULL, NULL, NULL, NULL, NULL
			FROM template_reminders FORCE INDEX (template_reminders_due)
			WHERE template_id = ? AND notified_at IS NULL ORDER BY user_id LIMIT ? FOR UPDATE SKIP LOCKED`, t.ID, left)
	}, func(tx *sql.Tx, t *quan.Template, due []quan.DueReminder) error {
		users := make([]int64, len(due))
		for i, d := range due {
			users[i] = d.UserID
		}
		for part := range slices.Chunk(users, claimBatch) {
			args := append([]any{utc(now), t.ID}, sqlrow.Args(nil, part)[1:]...)
			if _, err := tx.ExecContext(ctx, `UPDATE template_reminders SET notified_at = ?
				WHERE template_id = ? AND user_id IN (`+sqlrow.Params(len(part))+`)`, args...); err != nil {
				return err
			}
		}
		return nil
	})
}

// remind is the transaction of RemindExpiring and RemindOpening: the
// templates of list, for each the reminders of due up to what is left of
// limit with their users' contacts, fn's notifications recorded, and
// mark. A retried transaction calls fn again with what is due then.
func (s *Store) remind(ctx context.Context, now time.Time, limit int, fn quan.RemindFunc, what string,
	list func(*sql.Tx) ([]*quan.Template, error),
	due func(*sql.Tx, *quan.Template, int) ([]quan.DueReminder, error),
	mark func(*sql.Tx, *quan.Template, []quan.DueReminder) error,
) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	var taken int
	err := s.db.inTx(ctx, func(tx *sql.Tx) error {
		taken = 0
		ts, err := list(tx)
		if err != nil {
			return err
		}
		for _, t := range ts {
			if taken >= limit {
				break
			}
			ds, err := due(tx, t, limit-taken)
			if err != nil {
				return fmt.Errorf("template %d: %w", t.ID, err)
			}
			if len(ds) == 0 {
				continue
			}
			if err := fillContacts(ctx, tx, ds); err != nil {
				return fmt.Errorf("template %d: %w", t.ID, err)
			}
			ns, err := fn(t, ds)
			if err != nil {
				return fmt.Errorf("template %d: %w", t.ID, err)
			}
			if _, err := recordNotifications(ctx, tx, now, ns); err != nil {
				return fmt.Errorf("template %d: %w", t.ID, err)
			}
			if err := mark(tx, t, ds); err != nil {
				return fmt.Errorf("template %d: mark %d done: %w", t.ID, len(ds), translate(err))
			}
			taken += len(ds)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	return taken, nil
}

// fillContacts sets the Contact of each of ds from the contacts on file.
func fillContacts(ctx context.Context, tx *sql.Tx, ds []quan.DueReminder) error {
	users := make([]int64, 0, len(ds))
	for _, d := range ds {
		users = append(users, d.UserID)
	}
	slices.Sort(users)
	users = slices.Compact(users)
	byUser := make(map[int64]*quan.Contact, len(users))
	for part := range slices.Chunk(users, notifyBatch) {
		cs, err := sqlrow.Query(ctx, tx, "read contacts", sqlrow.ScanContact,
			`SELECT `+contactColumns+` FROM contacts WHERE user_id IN (`+sqlrow.Params(len(part))+`)`, sqlrow.Args(nil, part)[1:]...)
		if err != nil {
			return err
		}
		for _, c := range cs {
			byUser[c.UserID] = c
		}
	}
	for i := range ds {
		if c := byUser[ds[i].UserID]; c != nil {
			ds[i].Contact = *c
		}
	}
	return nil
}

// Subscribe implements quan.ReminderStore.
func (s *Store) Subscribe(ctx context.Context, sub *quan.Subscription) (_ bool, err error) {
	defer s.db.unavailable(&err)
	var created bool
	err = s.db.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT IGNORE INTO template_reminders (template_id, user_id, created_at)
			VALUES (?, ?, ?)`, sub.TemplateID, sub.UserID, utc(sub.CreatedAt))
		if err != nil {
			return translate(err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if created = n == 1; created {
			return nil
		}
		return tx.QueryRowContext(ctx, `SELECT created_at, notified_at FROM template_reminders
			WHERE template_id = ? AND user_id = ?`, sub.TemplateID, sub.UserID).Scan(sqlrow.Time(&sub.CreatedAt), sqlrow.NullTime(&sub.NotifiedAt))
	})
	if err != nil {
		return false, fmt.Errorf("subscribe: %w", err)
	}
	return created, nil
}

// Unsubscribe implements quan.ReminderStore.
func (s *Store) Unsubscribe(ctx context.Context, template, user int64) (_ bool, err error) {
	defer s.db.unavailable(&err)
	res, err := s.db.db.ExecContext(ctx, `DELETE FROM template_reminders WHERE template_id = ? AND user_id = ?`, template, user)
	if err != nil {
		return false, fmt.Errorf("unsubscribe: %w", translate(err))
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// Subscriptions implements quan.ReminderStore along
// template_reminders_user.
func (s *Store) Subscriptions(ctx context.Context, user int64) (_ []*quan.SubscriptionView, err error) {
	defer s.db.unavailable(&err)
	return sqlrow.Query(ctx, s.db.db, "subscriptions", sqlrow.ScanSubscriptionView, `
		SELECT r.template_id, r.user_id, r.created_at, r.notified_at, t.name, t.issue_start, t.remind_lead
		FROM template_reminders r JOIN templates t ON t.id = r.template_id
		WHERE r.user_id = ? ORDER BY t.issue_start DESC, r.template_id LIMIT ?`, user, quan.MaxPageSize)
}
