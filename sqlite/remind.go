package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/sqlrow"
)

var _ quan.ReminderStore = (*Store)(nil)

// remindTemplatesSQL are the templates whose coupons may owe an expiry
// reminder: coupons never outlive their template's issue end.
var remindTemplatesSQL = `SELECT ` + templateColumns + ` FROM templates
	WHERE remind_before > 0 AND issue_end > ? ORDER BY id`

// expiringSQL takes a template's coupons due along coupons_remind_due.
const expiringSQL = `SELECT c.user_id, c.id, c.valid_end, k.phone, k.mail, k.lang
	FROM coupons c INDEXED BY coupons_remind_due LEFT JOIN contacts k ON k.user_id = c.user_id
	WHERE c.template_id = ? AND c.status = 'available' AND c.reminded_at IS NULL
		AND c.valid_end > ? AND c.valid_end <= ?
	ORDER BY c.valid_end LIMIT ?`

// RemindExpiring implements quan.ReminderStore in one write transaction,
// one template at a time, its coupons along coupons_remind_due.
func (s *Store) RemindExpiring(ctx context.Context, now time.Time, limit int, fn quan.RemindFunc) (_ int, err error) {
	defer s.db.unavailable(&err)
	return s.remind(ctx, now, limit, fn, "expiry reminders", func(tx *sql.Tx) ([]*quan.Template, error) {
		return sqlrow.Query(ctx, tx, "templates with expiry reminders", sqlrow.ScanTemplate, remindTemplatesSQL, micros(now))
	}, func(tx *sql.Tx, t *quan.Template, left int) ([]quan.DueReminder, error) {
		return sqlrow.Query(ctx, tx, "coupons due a reminder", sqlrow.ScanDue, expiringSQL, t.ID, micros(now), micros(now.Add(time.Duration(t.RemindBefore))), left)
	}, func(tx *sql.Tx, t *quan.Template, due []quan.DueReminder) error {
		ids := make([]int64, len(due))
		for i, d := range due {
			ids[i] = d.CouponID
		}
		b, _ := json.Marshal(ids)
		_, err := tx.ExecContext(ctx, `UPDATE coupons SET reminded_at = ? WHERE id IN (SELECT value FROM json_each(?))`, micros(now), string(b))
		return err
	})
}

// RemindOpening implements quan.ReminderStore in one write transaction,
// one template at a time, its subscribers along template_reminders_due.
func (s *Store) RemindOpening(ctx context.Context, now time.Time, limit int, fn quan.RemindFunc) (_ int, err error) {
	defer s.db.unavailable(&err)
	at := micros(now)
	lead := int64(time.Duration(quan.DefaultRemindLead) / time.Second)
	return s.remind(ctx, now, limit, fn, "opening reminders", func(tx *sql.Tx) ([]*quan.Template, error) {
		return sqlrow.Query(ctx, tx, "templates opening", sqlrow.ScanTemplate, `SELECT `+templateColumns+` FROM templates t
			WHERE status = 'active' AND issue_end > ?1
				AND issue_start - (CASE WHEN remind_lead > 0 THEN remind_lead ELSE ?2 END) * 1000000 <= ?1
				AND EXISTS (SELECT 1 FROM template_reminders r WHERE r.template_id = t.id AND r.notified_at IS NULL)
			ORDER BY id`, at, lead)
	}, func(tx *sql.Tx, t *quan.Template, left int) ([]quan.DueReminder, error) {
		return sqlrow.Query(ctx, tx, "subscribers due a reminder", sqlrow.ScanDue, `SELECT r.user_id, NULL, NULL, k.phone, k.mail, k.lang
			FROM template_reminders r INDEXED BY template_reminders_due LEFT JOIN contacts k ON k.user_id = r.user_id
			WHERE r.template_id = ? AND r.notified_at IS NULL ORDER BY r.user_id LIMIT ?`, t.ID, left)
	}, func(tx *sql.Tx, t *quan.Template, due []quan.DueReminder) error {
		users := make([]int64, len(due))
		for i, d := range due {
			users[i] = d.UserID
		}
		b, _ := json.Marshal(users)
		_, err := tx.ExecContext(ctx, `UPDATE template_reminders SET notified_at = ?
			WHERE template_id = ? AND user_id IN (SELECT value FROM json_each(?))`, at, t.ID, string(b))
		return err
	})
}

// remind is the transaction of RemindExpiring and RemindOpening: the
// templates of list, for each the reminders of due up to what is left of
// limit, fn's notifications recorded, and mark.
func (s *Store) remind(ctx context.Context, now time.Time, limit int, fn quan.RemindFunc, what string,
	list func(*sql.Tx) ([]*quan.Template, error),
	due func(*sql.Tx, *quan.Template, int) ([]quan.DueReminder, error),
	mark func(*sql.Tx, *quan.Template, []quan.DueReminder) error,
) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	tx, err := s.db.write.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	defer tx.Rollback()
	ts, err := list(tx)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	taken := 0
	for _, t := range ts {
		if taken >= limit {
			break
		}
		ds, err := due(tx, t, limit-taken)
		if err != nil {
			return 0, fmt.Errorf("%s of template %d: %w", what, t.ID, err)
		}
		if len(ds) == 0 {
			continue
		}
		ns, err := fn(t, ds)
		if err != nil {
			return 0, fmt.Errorf("%s of template %d: %w", what, t.ID, err)
		}
		if _, err := recordNotifications(ctx, tx, now, ns); err != nil {
			return 0, fmt.Errorf("%s of template %d: %w", what, t.ID, err)
		}
		if err := mark(tx, t, ds); err != nil {
			return 0, fmt.Errorf("%s of template %d: mark %d done: %w", what, t.ID, len(ds), translate(err))
		}
		taken += len(ds)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("%s: commit: %w", what, translate(err))
	}
	return taken, nil
}

// Subscribe implements quan.ReminderStore.
func (s *Store) Subscribe(ctx context.Context, sub *quan.Subscription) (_ bool, err error) {
	defer s.db.unavailable(&err)
	res, err := s.db.write.ExecContext(ctx, `INSERT INTO template_reminders (template_id, user_id, created_at)
		VALUES (?, ?, ?) ON CONFLICT (template_id, user_id) DO NOTHING`, sub.TemplateID, sub.UserID, micros(sub.CreatedAt))
	if err != nil {
		return false, fmt.Errorf("subscribe: %w", translate(err))
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return n == 1, err
	}
	err = s.db.write.QueryRowContext(ctx, `SELECT created_at, notified_at FROM template_reminders
		WHERE template_id = ? AND user_id = ?`, sub.TemplateID, sub.UserID).Scan(sqlrow.Time(&sub.CreatedAt), sqlrow.NullTime(&sub.NotifiedAt))
	if err != nil {
		return false, fmt.Errorf("subscribe: read the subscription: %w", err)
	}
	return false, nil
}

// Unsubscribe implements quan.ReminderStore.
func (s *Store) Unsubscribe(ctx context.Context, template, user int64) (_ bool, err error) {
	defer s.db.unavailable(&err)
	res, err := s.db.write.ExecContext(ctx, `DELETE FROM template_reminders WHERE template_id = ? AND user_id = ?`, template, user)
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
	return sqlrow.Query(ctx, s.db.read, "subscriptions", sqlrow.ScanSubscriptionView, `
		SELECT r.template_id, r.user_id, r.created_at, r.notified_at, t.name, t.issue_start, t.remind_lead
		FROM template_reminders r JOIN templates t ON t.id = r.template_id
		WHERE r.user_id = ? ORDER BY t.issue_start DESC, r.template_id LIMIT ?`, user, quan.MaxPageSize)
}
