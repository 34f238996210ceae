package mysql

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

var _ quan.NotificationStore = (*Store)(nil)

// notifyBatch is the most rows one INSERT of notifications carries.
const notifyBatch = 1000

// RecordNotifications implements quan.NotificationStore, in a
// transaction of its own.
func (s *Store) RecordNotifications(ctx context.Context, now time.Time, ns []*quan.Notification) (_ int, err error) {
	defer s.db.unavailable(&err)
	var n int
	err = s.db.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		n, err = recordNotifications(ctx, tx, now, ns)
		return err
	})
	return n, err
}

// recordNotifications inserts ns in tx, passing over the keys recorded
// before (INSERT IGNORE: the connection counts found rows, so ON DUPLICATE
// KEY UPDATE would count the duplicates too; NotificationValues has checked
// and clipped what could make IGNORE hide a truncation), and returns how
// many it inserted. A source calls it
// inside its own transaction, so the notifications are owed exactly when
// what causes them commits.
func recordNotifications(ctx context.Context, tx *sql.Tx, now time.Time, ns []*quan.Notification) (int, error) {
	total := 0
	for start := 0; start < len(ns); start += notifyBatch {
		part := ns[start:min(start+notifyBatch, len(ns))]
		args := make([]any, 0, len(part)*14)
		for _, n := range part {
			v, err := sqlrow.NotificationValues(n, now, utc)
			if err != nil {
				return 0, fmt.Errorf("record notifications: %w", err)
			}
			args = append(args, v...)
		}
		rows := strings.TrimSuffix(strings.Repeat(sqlrow.NotificationParams+", ", len(part)), ", ")
		res, err := tx.ExecContext(ctx, `INSERT IGNORE INTO notifications `+sqlrow.NotificationInsert+` VALUES `+rows, args...)
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

// Notification implements quan.NotificationStore.
func (s *Store) Notification(ctx context.Context, source string, user int64, ch quan.NotifyType) (_ *quan.Notification, err error) {
	defer s.db.unavailable(&err)
	n, _, err := sqlrow.ScanNotification(s.db.db.QueryRowContext(ctx, `SELECT `+sqlrow.NotificationColumns+
		` FROM notifications WHERE source = ? AND user_id = ? AND channel = ?`, source, user, ch))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("notification %s of user %d on %s: %w", source, user, ch, quan.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read notification %s of user %d on %s: %w", source, user, ch, err)
	}
	return n, nil
}

// FailedNotifications implements quan.NotificationStore along
// notifications_failed.
func (s *Store) FailedNotifications(ctx context.Context, source string, ch quan.NotifyType, afterID int64, limit int) (_ []*quan.Notification, err error) {
	defer s.db.unavailable(&err)
	return sqlrow.Query(ctx, s.db.db, "failed notifications", func(r sqlrow.Scanner) (*quan.Notification, error) {
		n, _, err := sqlrow.ScanNotification(r)
		return n, err
	}, `SELECT `+sqlrow.NotificationColumns+` FROM notifications FORCE INDEX (notifications_failed)
		WHERE source = ? AND status = ? AND channel = ? AND id > ? ORDER BY id LIMIT ?`,
		source, quan.NotificationFailed, ch, afterID, max(limit, 0))
}

// NotificationCounts implements quan.NotificationStore along
// notifications_failed, which holds the columns it reads.
func (s *Store) NotificationCounts(ctx context.Context, source string) (_ []quan.NotificationCount, err error) {
	defer s.db.unavailable(&err)
	return sqlrow.Query(ctx, s.db.db, "count notifications", func(r sqlrow.Scanner) (quan.NotificationCount, error) {
		var c quan.NotificationCount
		return c, r.Scan(&c.Channel, &c.Status, &c.Count)
	}, `SELECT channel, status, count(*) FROM notifications WHERE source = ?
		GROUP BY channel, status ORDER BY channel, status`, source)
}

// TakeNotifications implements quan.NotificationStore. The due messages
// are read along notifications_due FOR UPDATE SKIP LOCKED: dispatchers
// taking at once lock different rows instead of waiting for each other,
// and none gets a row another is taking.
func (s *Store) TakeNotifications(ctx context.Context, ch quan.NotifyType, owner string, now, lease time.Time, limit int) (_ []*quan.Notification, err error) {
	defer s.db.unavailable(&err)
	if owner == "" {
		return nil, fmt.Errorf("take notifications: %w", quan.Errorf(quan.EINVALID, "a dispatcher needs a name to hold messages"))
	}
	if limit <= 0 {
		return nil, nil
	}
	var out []*quan.Notification
	err = s.db.inTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT `+sqlrow.NotificationColumns+` FROM notifications
			WHERE channel = ? AND next_at <= ? ORDER BY next_at LIMIT ? FOR UPDATE SKIP LOCKED`, ch, utc(now), limit)
		if err != nil {
			return err
		}
		out, err = sqlrow.All(rows, func(r sqlrow.Scanner) (*quan.Notification, error) {
			n, prev, err := sqlrow.ScanNotification(r)
			if err != nil {
				return nil, err
			}
			n.Retaken = prev != ""
			n.Attempts++
			n.NextAt, n.UpdatedAt = lease, now
			return n, nil
		})
		if err != nil || len(out) == 0 {
			return err
		}
		ids := make([]int64, len(out))
		for i, n := range out {
			ids[i] = n.ID
		}
		args := append([]any{utc(lease), owner, utc(now)}, sqlrow.Args(nil, ids)[1:]...)
		_, err = tx.ExecContext(ctx, `UPDATE notifications SET next_at = ?, owner = ?, attempts = attempts + 1, updated_at = ?
			WHERE id IN (`+sqlrow.Params(len(ids))+`)`, args...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("take notifications: %w", err)
	}
	if len(out) == 0 {
		return nil, nil
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
	var total int
	err = s.db.inTx(ctx, func(tx *sql.Tx) error {
		total = 0
		for _, g := range sqlrow.GroupResults(rs) {
			for start := 0; start < len(g.IDs); start += notifyBatch {
				ids := g.IDs[start:min(start+notifyBatch, len(g.IDs))]
				args := []any{g.Status, g.Reason, nullTime(g.NextAt), g.GiveBack, utc(now), owner}
				args = append(args, sqlrow.Args(nil, ids)[1:]...)
				res, err := tx.ExecContext(ctx, `UPDATE notifications
					SET status = ?, reason = ?, next_at = ?, owner = '', attempts = attempts - ?, updated_at = ?
					WHERE owner = ? AND next_at IS NOT NULL AND id IN (`+sqlrow.Params(len(ids))+`)`, args...)
				if err != nil {
					return err
				}
				n, err := res.RowsAffected()
				if err != nil {
					return err
				}
				total += int(n)
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("finish notifications: %w", err)
	}
	return total, nil
}

// mineSQL is a derived table "mine" of the ids of the entries of channel
// (a literal, 'inbox' or 'popup') the user sees; it takes the user three
// times. Its own entries come along notifications_user, the broadcasts
// along notifications_broadcast (task_id, 0, channel) for the tasks of the
// user's coupons, found along coupons_user_template_seq and
// coupons_archive_user. No CTE: MariaDB takes none in INSERT … SELECT.
func mineSQL(channel string) string {
	return `(SELECT id FROM notifications WHERE user_id = ? AND channel = '` + channel + `'
		UNION ALL
		SELECT id FROM notifications WHERE user_id = 0 AND channel = '` + channel + `' AND task_id IN (
			SELECT task_id FROM coupons WHERE user_id = ? AND task_id IS NOT NULL
			UNION
			SELECT task_id FROM coupons_archive WHERE user_id = ? AND task_id IS NOT NULL)) AS mine`
}

func mineArgs(user int64, rest ...any) []any { return append([]any{user, user, user}, rest...) }

// entriesSQL reads the entries of mineSQL with the user's marks (one more
// user argument); unread keeps those without.
func entriesSQL(channel string, unread bool) string {
	q := `SELECT ` + sqlrow.NotificationColumnsOf("n.") + `, m.marked_at
		FROM ` + mineSQL(channel) + ` JOIN notifications n ON n.id = mine.id
		LEFT JOIN notification_marks m ON m.notification_id = n.id AND m.user_id = ?`
	if unread {
		q += ` WHERE m.notification_id IS NULL`
	}
	return q
}

func scanEntry(r sqlrow.Scanner) (*quan.InboxEntry, error) {
	var e quan.InboxEntry
	n, _, err := sqlrow.ScanNotification(sqlrow.ScanTail{R: r, Tail: sqlrow.NullTime(&e.MarkedAt)})
	if err != nil {
		return nil, err
	}
	e.Notification = *n
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
	tx, err := s.db.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, 0, fmt.Errorf("inbox: %w", err)
	}
	defer tx.Rollback()
	var total int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM (`+entriesSQL("inbox", f.Unread)+`) AS e`,
		mineArgs(f.UserID, f.UserID)...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("inbox: count: %w", err)
	}
	if offset >= total {
		return []*quan.InboxEntry{}, total, nil
	}
	es, err := sqlrow.Query(ctx, tx, "inbox", scanEntry, entriesSQL("inbox", f.Unread)+` ORDER BY n.id DESC LIMIT ? OFFSET ?`,
		mineArgs(f.UserID, f.UserID, limit, offset)...)
	return es, total, err
}

// UnreadCount implements quan.NotificationStore.
func (s *Store) UnreadCount(ctx context.Context, user int64) (_ int, err error) {
	defer s.db.unavailable(&err)
	var n int
	if err := s.db.db.QueryRowContext(ctx, `SELECT count(*) FROM (`+entriesSQL("inbox", true)+`) AS e`,
		mineArgs(user, user)...).Scan(&n); err != nil {
		return 0, fmt.Errorf("unread count: %w", err)
	}
	return n, nil
}

// MarkRead implements quan.NotificationStore: the marks are inserted from
// the user's own entries, so ids of others' messages mark nothing, and
// INSERT IGNORE passes over the marks there are.
func (s *Store) MarkRead(ctx context.Context, user int64, ids []int64, now time.Time) (_ int, err error) {
	defer s.db.unavailable(&err)
	q := `INSERT IGNORE INTO notification_marks (notification_id, user_id, marked_at, created_at)
		SELECT n.id, ?, ?, n.created_at FROM ` + mineSQL("inbox") + ` JOIN notifications n ON n.id = mine.id`
	args := append([]any{user, utc(now)}, mineArgs(user)...)
	if ids != nil {
		if len(ids) == 0 {
			return 0, nil
		}
		q += ` WHERE n.id IN (` + sqlrow.Params(len(ids)) + `)`
		args = append(args, sqlrow.Args(nil, ids)[1:]...)
	}
	var n int64
	err = s.db.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("mark read: %w", err)
	}
	return int(n), nil
}

// Popups implements quan.NotificationStore.
func (s *Store) Popups(ctx context.Context, user int64, now time.Time) (_ []*quan.InboxEntry, err error) {
	defer s.db.unavailable(&err)
	return sqlrow.Query(ctx, s.db.db, "popups", scanEntry, entriesSQL("popup", true)+`
		AND (n.expires_at IS NULL OR n.expires_at > ?) ORDER BY n.id DESC LIMIT ?`, mineArgs(user, user, utc(now), quan.MaxPageSize)...)
}

// AckPopup implements quan.NotificationStore.
func (s *Store) AckPopup(ctx context.Context, user, id int64, now time.Time) (err error) {
	defer s.db.unavailable(&err)
	var created time.Time
	err = s.db.db.QueryRowContext(ctx, `SELECT n.created_at FROM `+mineSQL("popup")+
		` JOIN notifications n ON n.id = mine.id WHERE n.id = ?`, mineArgs(user, id)...).Scan(sqlrow.Time(&created))
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("popup %d of user %d: %w", id, user, quan.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("ack popup %d: %w", id, err)
	}
	if _, err := s.db.db.ExecContext(ctx, `INSERT IGNORE INTO notification_marks (notification_id, user_id, marked_at, created_at)
		VALUES (?, ?, ?, ?)`, id, user, utc(now), utc(created)); err != nil {
		return fmt.Errorf("ack popup %d: %w", id, err)
	}
	return nil
}

// DeleteInApp implements quan.NotificationStore along
// notification_marks_created and notifications_created.
func (s *Store) DeleteInApp(ctx context.Context, before time.Time, limit int) (_ int, err error) {
	defer s.db.unavailable(&err)
	total := 0
	for _, q := range []string{
		`DELETE FROM notification_marks WHERE created_at < ? LIMIT ?`,
		`DELETE FROM notifications WHERE channel IN ('inbox', 'popup') AND created_at < ? LIMIT ?`,
	} {
		res, err := s.db.db.ExecContext(ctx, q, utc(before), limit)
		if err != nil {
			return total, fmt.Errorf("delete old inbox entries: %w", err)
		}
		n, _ := res.RowsAffected()
		total += int(n)
	}
	return total, nil
}

// PendingNotifications implements quan.NotificationStore along
// notifications_due.
func (s *Store) PendingNotifications(ctx context.Context, now time.Time) (_ map[quan.NotifyType]int64, err error) {
	defer s.db.unavailable(&err)
	counts, err := sqlrow.Query(ctx, s.db.db, "count pending notifications", func(r sqlrow.Scanner) (quan.NotificationCount, error) {
		var c quan.NotificationCount
		return c, r.Scan(&c.Channel, &c.Count)
	}, `SELECT channel, count(*) FROM notifications WHERE next_at IS NOT NULL AND (next_at <= ? OR owner <> '')
		GROUP BY channel`, utc(now))
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
	return sqlrow.Secret(ctx, s.db.db, `INSERT IGNORE INTO secrets (name, value) VALUES (?, ?)`, name)
}
