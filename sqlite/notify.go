package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/sqlrow"
)

var _ quan.NotificationStore = (*Store)(nil)

// notifyBatch is the most rows one INSERT of notifications carries: 14
// parameters a row, within SQLite's 32,766.
const notifyBatch = 1000

// RecordNotifications implements quan.NotificationStore, in a
// transaction of its own.
func (s *Store) RecordNotifications(ctx context.Context, now time.Time, ns []*quan.Notification) (_ int, err error) {
	defer s.db.unavailable(&err)
	tx, err := s.db.write.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("record notifications: %w", err)
	}
	defer tx.Rollback()
	n, err := recordNotifications(ctx, tx, now, ns)
	if err != nil {
		return 0, err
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("record notifications: commit: %w", err)
	}
	return n, nil
}

// recordNotifications inserts ns in tx, passing over the keys recorded
// before, and returns how many it inserted. A source that causes
// notifications (a chunk issuing coupons, a sweep finding them expiring)
// calls it inside its own transaction, so the notifications are owed
// exactly when what causes them commits.
func recordNotifications(ctx context.Context, tx *sql.Tx, now time.Time, ns []*quan.Notification) (int, error) {
	total := 0
	for start := 0; start < len(ns); start += notifyBatch {
		part := ns[start:min(start+notifyBatch, len(ns))]
		args := make([]any, 0, len(part)*14)
		for _, n := range part {
			v, err := sqlrow.NotificationValues(n, now, micros)
			if err != nil {
				return 0, fmt.Errorf("record notifications: %w", err)
			}
			args = append(args, v...)
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO notifications `+sqlrow.NotificationInsert+` VALUES `+
			repeatParams(sqlrow.NotificationParams, len(part))+
			` ON CONFLICT (source, user_id, channel) DO NOTHING`, args...)
		if err != nil {
			return 0, fmt.Errorf("record notifications: %w", translate(err))
		}
		n, err := res.RowsAffected()
		if err != nil {
			return 0, fmt.Errorf("record notifications: %w", err)
		}
		total += int(n)
	}
	return total, nil
}

// repeatParams returns n copies of row, comma-separated.
func repeatParams(row string, n int) string {
	b := make([]byte, 0, n*(len(row)+2))
	for i := range n {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, row...)
	}
	return string(b)
}

// Notification implements quan.NotificationStore.
func (s *Store) Notification(ctx context.Context, source string, user int64, ch quan.NotifyType) (_ *quan.Notification, err error) {
	defer s.db.unavailable(&err)
	n, _, err := sqlrow.ScanNotification(s.db.read.QueryRowContext(ctx, `SELECT `+sqlrow.NotificationColumns+
		` FROM notifications WHERE source = ? AND user_id = ? AND channel = ?`, source, user, ch))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("notification %s of user %d on %s: %w", source, user, ch, quan.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read notification %s of user %d on %s: %w", source, user, ch, err)
	}
	return n, nil
}

// NotificationCounts implements quan.NotificationStore along
// notifications_failed, which holds the columns it reads: a task's
// million SMS are counted without reading the table.
func (s *Store) NotificationCounts(ctx context.Context, source string) (_ []quan.NotificationCount, err error) {
	defer s.db.unavailable(&err)
	return sqlrow.Query(ctx, s.db.read, "count notifications", func(r sqlrow.Scanner) (quan.NotificationCount, error) {
		var c quan.NotificationCount
		return c, r.Scan(&c.Channel, &c.Status, &c.Count)
	}, countsSQL, source)
}

// FailedNotifications implements quan.NotificationStore along
// notifications_failed.
func (s *Store) FailedNotifications(ctx context.Context, source string, ch quan.NotifyType, afterID int64, limit int) (_ []*quan.Notification, err error) {
	defer s.db.unavailable(&err)
	return sqlrow.Query(ctx, s.db.read, "failed notifications", func(r sqlrow.Scanner) (*quan.Notification, error) {
		n, _, err := sqlrow.ScanNotification(r)
		return n, err
	}, failedSQL, source, quan.NotificationFailed, ch, afterID, max(limit, 0))
}

// failedSQL reads a page of the failed notifications of a source on a
// channel, a range of notifications_failed.
var failedSQL = `SELECT ` + sqlrow.NotificationColumns + ` FROM notifications
	WHERE source = ? AND status = ? AND channel = ? AND id > ? ORDER BY id LIMIT ?`

const countsSQL = `SELECT channel, status, count(*) FROM notifications WHERE source = ?
	GROUP BY channel, status ORDER BY channel, status`

// takeSQL selects the messages a dispatcher takes, along notifications_due.
var takeSQL = `SELECT ` + sqlrow.NotificationColumns + ` FROM notifications
	WHERE channel = ? AND next_at <= ? ORDER BY next_at LIMIT ?`

// TakeNotifications implements quan.NotificationStore. SQLite has one
// writer, so reading and updating in the write transaction is enough to
// keep two dispatchers from taking the same message.
func (s *Store) TakeNotifications(ctx context.Context, ch quan.NotifyType, owner string, now, lease time.Time, limit int) (_ []*quan.Notification, err error) {
	defer s.db.unavailable(&err)
	if owner == "" {
		return nil, fmt.Errorf("take notifications: %w", quan.Errorf(quan.EINVALID, "a dispatcher needs a name to hold messages"))
	}
	if limit <= 0 {
		return nil, nil
	}
	tx, err := s.db.write.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("take notifications: %w", err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, takeSQL, ch, micros(now), limit)
	if err != nil {
		return nil, fmt.Errorf("take notifications: %w", err)
	}
	out, err := sqlrow.All(rows, func(r sqlrow.Scanner) (*quan.Notification, error) {
		n, prev, err := sqlrow.ScanNotification(r)
		if err != nil {
			return nil, err
		}
		n.Retaken = prev != ""
		n.Attempts++
		n.NextAt, n.UpdatedAt = lease, now
		return n, nil
	})
	if err != nil {
		return nil, fmt.Errorf("take notifications: %w", err)
	}
	if len(out) == 0 {
		return nil, nil
	}
	ids := make([]int64, len(out))
	for i, n := range out {
		ids[i] = n.ID
	}
	args := append([]any{micros(lease), owner, micros(now)}, sqlrow.Args(nil, ids)[1:]...)
	if _, err := tx.ExecContext(ctx, `UPDATE notifications SET next_at = ?, owner = ?, attempts = attempts + 1, updated_at = ?
		WHERE id IN (`+sqlrow.Params(len(ids))+`)`, args...); err != nil {
		return nil, fmt.Errorf("take notifications: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("take notifications: commit: %w", err)
	}
	return out, nil
}

// FinishNotifications implements quan.NotificationStore: one UPDATE per
// kind of result, of the messages owner still holds.
func (s *Store) FinishNotifications(ctx context.Context, owner string, now time.Time, rs []quan.NotificationResult) (_ int, err error) {
	defer s.db.unavailable(&err)
	if err := sqlrow.CheckResults(rs); err != nil {
		return 0, fmt.Errorf("finish notifications: %w", err)
	}
	tx, err := s.db.write.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("finish notifications: %w", err)
	}
	defer tx.Rollback()
	total := 0
	for _, g := range sqlrow.GroupResults(rs) {
		for start := 0; start < len(g.IDs); start += notifyBatch {
			ids := g.IDs[start:min(start+notifyBatch, len(g.IDs))]
			newOwner := ""
			args := []any{g.Status, g.Reason, nullMicros(g.NextAt), newOwner, g.GiveBack, micros(now), owner}
			args = append(args, sqlrow.Args(nil, ids)[1:]...)
			res, err := tx.ExecContext(ctx, `UPDATE notifications
				SET status = ?, reason = ?, next_at = ?, owner = ?, attempts = attempts - ?, updated_at = ?
				WHERE owner = ? AND next_at IS NOT NULL AND id IN (`+sqlrow.Params(len(ids))+`)`, args...)
			if err != nil {
				return 0, fmt.Errorf("finish notifications: %w", err)
			}
			n, err := res.RowsAffected()
			if err != nil {
				return 0, fmt.Errorf("finish notifications: %w", err)
			}
			total += int(n)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("finish notifications: commit: %w", err)
	}
	return total, nil
}

// mineSQL is the ids of the entries of channel (a literal, 'inbox' or
// 'popup') that user ?1 sees: its own, along notifications_inbox or
// notifications_popup, and the broadcasts of the tasks whose coupons it
// holds (still, or archived), found along coupons_user_template_seq (the
// user's few coupons, each then read for its task_id: no index on coupons
// is added for this, since every distribution would pay for its upkeep)
// and then notifications_broadcast, named: the planner would otherwise
// read every broadcast of the channel along notifications_inbox (user 0).
func mineSQL(channel string) string {
	return `WITH mine(id) AS (
		SELECT id FROM notifications WHERE user_id = ?1 AND channel = '` + channel + `'
		UNION ALL
		SELECT id FROM notifications INDEXED BY notifications_broadcast
		WHERE user_id = 0 AND channel = '` + channel + `' AND task_id IN (
			SELECT task_id FROM coupons WHERE user_id = ?1 AND task_id IS NOT NULL
			UNION
			SELECT task_id FROM coupons_archive WHERE user_id = ?1 AND task_id IS NOT NULL))`
}

// entriesSQL reads the entries of mineSQL with the user's marks; unread
// keeps those without. The rest of the statement (ORDER, LIMIT) is the
// caller's.
func entriesSQL(channel string, unread bool) string {
	q := mineSQL(channel) + `
		SELECT ` + sqlrow.NotificationColumnsOf("n.") + `, coalesce(m.marked_at, 0)
		FROM mine JOIN notifications n ON n.id = mine.id
		LEFT JOIN notification_marks m ON m.notification_id = n.id AND m.user_id = ?1`
	if unread {
		q += ` WHERE m.notification_id IS NULL`
	}
	return q
}

// countSQL counts the entries of mineSQL, unread ones only if unread.
func countSQL(channel string, unread bool) string {
	q := mineSQL(channel) + ` SELECT count(*) FROM mine`
	if unread {
		q += ` WHERE NOT EXISTS (SELECT 1 FROM notification_marks m WHERE m.notification_id = mine.id AND m.user_id = ?1)`
	}
	return q
}

func scanEntry(r sqlrow.Scanner) (*quan.InboxEntry, error) {
	var e quan.InboxEntry
	var marked int64
	n, _, err := sqlrow.ScanNotification(sqlrow.ScanTail{R: r, Tail: &marked})
	if err != nil {
		return nil, err
	}
	e.Notification = *n
	if marked != 0 {
		e.MarkedAt = time.UnixMicro(marked).UTC()
	}
	return &e, nil
}

// Inbox implements quan.NotificationStore.
func (s *Store) Inbox(ctx context.Context, f quan.InboxFilter) (_ []*quan.InboxEntry, _ int, err error) {
	defer s.db.unavailable(&err)
	limit := f.Limit
	if limit <= 0 {
		limit = quan.DefaultPageSize
	}
	limit, offset := min(limit, quan.MaxPageSize), max(f.Offset, 0)
	tx, err := s.db.read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, 0, fmt.Errorf("inbox: %w", err)
	}
	defer tx.Rollback()
	var total int
	if err := tx.QueryRowContext(ctx, countSQL("inbox", f.Unread), f.UserID).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("inbox: count: %w", err)
	}
	if offset >= total {
		return []*quan.InboxEntry{}, total, nil
	}
	es, err := sqlrow.Query(ctx, tx, "inbox", scanEntry, entriesSQL("inbox", f.Unread)+` ORDER BY n.id DESC LIMIT ?2 OFFSET ?3`, f.UserID, limit, offset)
	return es, total, err
}

// UnreadCount implements quan.NotificationStore.
func (s *Store) UnreadCount(ctx context.Context, user int64) (_ int, err error) {
	defer s.db.unavailable(&err)
	var n int
	if err := s.db.read.QueryRowContext(ctx, countSQL("inbox", true), user).Scan(&n); err != nil {
		return 0, fmt.Errorf("unread count: %w", err)
	}
	return n, nil
}

// MarkRead implements quan.NotificationStore: the marks are inserted from
// the user's own unread entries, so ids of others' messages mark nothing.
func (s *Store) MarkRead(ctx context.Context, user int64, ids []int64, now time.Time) (_ int, err error) {
	defer s.db.unavailable(&err)
	q := mineSQL("inbox") + `
		INSERT INTO notification_marks (notification_id, user_id, marked_at, created_at)
		SELECT n.id, ?1, ?2, n.created_at FROM mine JOIN notifications n ON n.id = mine.id WHERE true`
	args := []any{user, micros(now)}
	if ids != nil {
		if len(ids) == 0 {
			return 0, nil
		}
		q += ` AND n.id IN (` + sqlrow.Params(len(ids)) + `)`
		args = append(args, sqlrow.Args(nil, ids)[1:]...)
	}
	q += ` ON CONFLICT DO NOTHING`
	res, err := s.db.write.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, fmt.Errorf("mark read: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// Popups implements quan.NotificationStore.
func (s *Store) Popups(ctx context.Context, user int64, now time.Time) (_ []*quan.InboxEntry, err error) {
	defer s.db.unavailable(&err)
	return sqlrow.Query(ctx, s.db.read, "popups", scanEntry, entriesSQL("popup", true)+`
		AND (n.expires_at IS NULL OR n.expires_at > ?2) ORDER BY n.id DESC LIMIT ?3`, user, micros(now), quan.MaxPageSize)
}

// AckPopup implements quan.NotificationStore.
func (s *Store) AckPopup(ctx context.Context, user, id int64, now time.Time) (err error) {
	defer s.db.unavailable(&err)
	var created int64
	err = s.db.read.QueryRowContext(ctx, mineSQL("popup")+
		` SELECT n.created_at FROM mine JOIN notifications n ON n.id = mine.id WHERE n.id = ?2`, user, id).Scan(&created)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("popup %d of user %d: %w", id, user, quan.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("ack popup %d: %w", id, err)
	}
	if _, err := s.db.write.ExecContext(ctx, `INSERT INTO notification_marks (notification_id, user_id, marked_at, created_at)
		VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`, id, user, micros(now), created); err != nil {
		return fmt.Errorf("ack popup %d: %w", id, err)
	}
	return nil
}

// DeleteInApp implements quan.NotificationStore along
// notification_marks_created and notifications_in_app_created.
func (s *Store) DeleteInApp(ctx context.Context, before time.Time, limit int) (_ int, err error) {
	defer s.db.unavailable(&err)
	tx, err := s.db.write.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("delete old inbox entries: %w", err)
	}
	defer tx.Rollback()
	total := 0
	for _, q := range []string{deleteMarksSQL, deleteInAppSQL} {
		res, err := tx.ExecContext(ctx, q, micros(before), limit)
		if err != nil {
			return 0, fmt.Errorf("delete old inbox entries: %w", err)
		}
		n, _ := res.RowsAffected()
		total += int(n)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("delete old inbox entries: commit: %w", err)
	}
	return total, nil
}

const (
	deleteMarksSQL = `DELETE FROM notification_marks WHERE rowid IN (
		SELECT rowid FROM notification_marks WHERE created_at < ? LIMIT ?)`
	deleteInAppSQL = `DELETE FROM notifications WHERE id IN (
		SELECT id FROM notifications WHERE channel IN ('inbox', 'popup') AND created_at < ? LIMIT ?)`
)

// PendingNotifications implements quan.NotificationStore along
// notifications_due, which holds only the messages still to send.
func (s *Store) PendingNotifications(ctx context.Context, now time.Time) (_ map[quan.NotifyType]int64, err error) {
	defer s.db.unavailable(&err)
	return pendingNotifications(ctx, s.db.read, micros(now))
}

func pendingNotifications(ctx context.Context, q sqlrow.Queryer, now any) (map[quan.NotifyType]int64, error) {
	counts, err := sqlrow.Query(ctx, q, "count pending notifications", func(r sqlrow.Scanner) (quan.NotificationCount, error) {
		var c quan.NotificationCount
		return c, r.Scan(&c.Channel, &c.Count)
	}, `SELECT channel, count(*) FROM notifications WHERE next_at IS NOT NULL AND (next_at <= ? OR owner <> '')
		GROUP BY channel`, now)
	if err != nil {
		return nil, err
	}
	out := make(map[quan.NotifyType]int64, len(counts))
	for _, c := range counts {
		out[c.Channel] = c.Count
	}
	return out, nil
}

var _ quan.SecretStore = (*Store)(nil)

// Secret implements quan.SecretStore in the secrets table.
func (s *Store) Secret(ctx context.Context, name string) (_ []byte, err error) {
	defer s.db.unavailable(&err)
	return sqlrow.Secret(ctx, s.db.write, `INSERT OR IGNORE INTO secrets (name, value) VALUES (?, ?)`, name)
}
