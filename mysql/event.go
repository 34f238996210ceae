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

var _ quan.EventStore = (*Store)(nil)

// TakeEvents implements quan.EventStore: the due events are picked FOR
// UPDATE SKIP LOCKED along events_due, so relays taking at once pass over
// each other's.
func (s *Store) TakeEvents(ctx context.Context, owner string, now, lease time.Time, limit int) (_ []*quan.Event, err error) {
	defer s.db.unavailable(&err)
	if owner == "" {
		return nil, fmt.Errorf("take events: %w", quan.Errorf(quan.EINVALID, "a relay needs a name to hold events"))
	}
	if limit <= 0 {
		return nil, nil
	}
	var out []*quan.Event
	err = s.db.inTx(ctx, func(tx *sql.Tx) error {
		out = nil
		// The events alone are locked: a locking read of the join would
		// lock the coupons too.
		ids, err := sqlrow.Query(ctx, tx, "due events", func(r sqlrow.Scanner) (id int64, err error) { return id, r.Scan(&id) },
			`SELECT id FROM events WHERE due_at <= ? ORDER BY due_at, id LIMIT ? FOR UPDATE SKIP LOCKED`, utc(now), limit)
		if err != nil || len(ids) == 0 {
			return err
		}
		var rs []sqlrow.EventRow
		for part := range slices.Chunk(ids, 500) {
			args := append([]any{utc(lease), owner}, sqlrow.Args(nil, part)[1:]...)
			if _, err := tx.ExecContext(ctx, `UPDATE events SET due_at = ?, owner = ?, attempts = attempts + 1
				WHERE id IN (`+sqlrow.Params(len(part))+`)`, args...); err != nil {
				return err
			}
			got, err := sqlrow.Query(ctx, tx, "due events", sqlrow.ScanEvent,
				`SELECT `+sqlrow.EventColumns+` FROM `+sqlrow.EventJoin+` WHERE e.id IN (`+sqlrow.Params(len(part))+`) ORDER BY e.id`, sqlrow.Args(nil, part)[1:]...)
			if err != nil {
				return err
			}
			rs = append(rs, got...)
		}
		out, err = sqlrow.EventData(ctx, tx, s.db.codes, rs)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("take events: %w", err)
	}
	return out, nil
}

// FinishEvents implements quan.EventStore.
func (s *Store) FinishEvents(ctx context.Context, owner string, now time.Time, seqs []int64) (_ int, err error) {
	defer s.db.unavailable(&err)
	var n int
	err = s.db.inTx(ctx, func(tx *sql.Tx) error {
		n, err = sqlrow.FinishEvents(ctx, tx, owner, utc(now), seqs)
		return err
	})
	return n, err
}

// Events implements quan.EventStore.
func (s *Store) Events(ctx context.Context, after int64, limit int) (_ []*quan.Event, err error) {
	defer s.db.unavailable(&err)
	rs, err := sqlrow.Query(ctx, s.db.db, "events", sqlrow.ScanEvent,
		`SELECT `+sqlrow.EventColumns+` FROM `+sqlrow.EventJoin+` WHERE e.id > ? ORDER BY e.id LIMIT ?`, after, limit)
	if err != nil {
		return nil, err
	}
	return sqlrow.EventData(ctx, s.db.db, s.db.codes, rs)
}

// PendingEvents implements quan.EventStore.
func (s *Store) PendingEvents(ctx context.Context) (_ int64, _ time.Time, err error) {
	defer s.db.unavailable(&err)
	return sqlrow.PendingEvents(ctx, s.db.db)
}

// DeleteEvents implements quan.EventStore along events_relayed.
func (s *Store) DeleteEvents(ctx context.Context, before time.Time, limit int) (_ int, err error) {
	defer s.db.unavailable(&err)
	res, err := s.db.db.ExecContext(ctx, `DELETE FROM events WHERE relayed_at < ? ORDER BY relayed_at LIMIT ?`, utc(before), limit)
	if err != nil {
		return 0, fmt.Errorf("delete events: %w", translate(err))
	}
	n, err := res.RowsAffected()
	return int(n), err
}
