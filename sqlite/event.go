package sqlite

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/sqlrow"
)

var _ quan.EventStore = (*Store)(nil)

// takeEventsSQL marks the events a relay takes and returns them: ?1 the
// lease, ?2 the owner, ?3 now, ?4 the most. It walks events_due from the
// lowest due_at (0: never taken).
const takeEventsSQL = `UPDATE events SET due_at = ?1, owner = ?2, attempts = attempts + 1
	WHERE id IN (SELECT id FROM events WHERE due_at <= ?3 ORDER BY due_at, id LIMIT ?4)
	RETURNING id`

// TakeEvents implements quan.EventStore in one write transaction.
func (s *Store) TakeEvents(ctx context.Context, owner string, now, lease time.Time, limit int) (_ []*quan.Event, err error) {
	defer s.db.unavailable(&err)
	if owner == "" {
		return nil, fmt.Errorf("take events: %w", quan.Errorf(quan.EINVALID, "a relay needs a name to hold events"))
	}
	if limit <= 0 {
		return nil, nil
	}
	tx, err := s.db.write.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("take events: %w", err)
	}
	defer tx.Rollback()
	ids, err := sqlrow.Query(ctx, tx, "take events", func(r sqlrow.Scanner) (id int64, err error) { return id, r.Scan(&id) },
		takeEventsSQL, micros(lease), owner, micros(now), limit)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	var rs []sqlrow.EventRow
	for part := range slices.Chunk(ids, 500) {
		got, err := sqlrow.Query(ctx, tx, "take events", sqlrow.ScanEvent,
			`SELECT `+sqlrow.EventColumns+` FROM `+sqlrow.EventJoin+` WHERE e.id IN (`+sqlrow.Params(len(part))+`)`, sqlrow.Args(nil, part)[1:]...)
		if err != nil {
			return nil, err
		}
		rs = append(rs, got...)
	}
	sortEventRows(rs)
	es, err := sqlrow.EventData(ctx, tx, s.db.codes, rs)
	if err != nil {
		return nil, fmt.Errorf("take events: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("take events: commit: %w", translate(err))
	}
	return es, nil
}

// FinishEvents implements quan.EventStore.
func (s *Store) FinishEvents(ctx context.Context, owner string, now time.Time, seqs []int64) (_ int, err error) {
	defer s.db.unavailable(&err)
	tx, err := s.db.write.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("finish events: %w", err)
	}
	defer tx.Rollback()
	n, err := sqlrow.FinishEvents(ctx, tx, owner, micros(now), seqs)
	if err != nil {
		return 0, err
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("finish events: commit: %w", translate(err))
	}
	return n, nil
}

// Events implements quan.EventStore.
func (s *Store) Events(ctx context.Context, after int64, limit int) (_ []*quan.Event, err error) {
	defer s.db.unavailable(&err)
	rs, err := sqlrow.Query(ctx, s.db.read, "events", sqlrow.ScanEvent,
		`SELECT `+sqlrow.EventColumns+` FROM `+sqlrow.EventJoin+` WHERE e.id > ? ORDER BY e.id LIMIT ?`, after, limit)
	if err != nil {
		return nil, err
	}
	return sqlrow.EventData(ctx, s.db.read, s.db.codes, rs)
}

// PendingEvents implements quan.EventStore along events_due.
func (s *Store) PendingEvents(ctx context.Context) (_ int64, _ time.Time, err error) {
	defer s.db.unavailable(&err)
	return sqlrow.PendingEvents(ctx, s.db.read)
}

// DeleteEvents implements quan.EventStore along events_relayed.
func (s *Store) DeleteEvents(ctx context.Context, before time.Time, limit int) (_ int, err error) {
	defer s.db.unavailable(&err)
	res, err := s.db.write.ExecContext(ctx, `DELETE FROM events WHERE id IN
		(SELECT id FROM events WHERE relayed_at IS NOT NULL AND relayed_at < ? LIMIT ?)`, micros(before), limit)
	if err != nil {
		return 0, fmt.Errorf("delete events: %w", translate(err))
	}
	n, err := res.RowsAffected()
	return int(n), err
}

func sortEventRows(rs []sqlrow.EventRow) {
	slices.SortFunc(rs, func(a, b sqlrow.EventRow) int { return cmp.Compare(a.Event.Seq, b.Event.Seq) })
}
