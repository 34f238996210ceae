package sqlrow

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/quanhq/quan"
)

// EventColumns are the columns ScanEvent reads, in its order, of events
// e joined with EventJoin. A coupon.issued event is a slim row (its type,
// shop, user, coupon and time): the coupon as issued is its columns that
// never change (template, seq, window, source, task, creation) with the
// status available and no order, read from coupons when the event is.
// Issuing a million coupons then writes a million rows of five columns to
// the outbox, not of twenty.
const EventColumns = `e.id, e.type, e.shop_no, e.user_id, e.object_id, e.created_at, e.attempts, e.data,
	COALESCE(e.template_id, c.template_id), COALESCE(e.seq, c.seq),
	COALESCE(e.status, CASE WHEN c.id IS NOT NULL THEN 'available' END),
	COALESCE(e.valid_start, c.valid_start), COALESCE(e.valid_end, c.valid_end), COALESCE(e.source, c.source),
	COALESCE(e.task_id, c.task_id), e.order_id, e.locked_until, e.discount,
	COALESCE(e.coupon_created_at, c.created_at), e.old_status`

// EventJoin is the FROM clause of EventColumns. A coupon archived before
// its coupon.issued event was read (a relay stopped for longer than
// --archive-after) reads with its ids alone.
const EventJoin = `events e LEFT JOIN coupons c ON e.type = 'coupon.issued' AND e.status IS NULL AND c.id = e.object_id`

// IssuedEventsSQL records the coupon.issued events of the coupons a WHERE
// clause appended to it selects, at their creation: slim rows (see
// EventColumns).
const IssuedEventsSQL = `INSERT INTO events (type, shop_no, user_id, object_id, created_at)
	SELECT 'coupon.issued', shop_no, user_id, id, created_at FROM coupons WHERE `

// RecordIssued records, in tx, the coupon.issued events of the coupons
// ids, batches of at most 500 a statement.
func RecordIssued(ctx context.Context, tx Execer, ids []int64) error {
	for part := range slices.Chunk(ids, 500) {
		if _, err := tx.ExecContext(ctx, IssuedEventsSQL+`id IN (`+Params(len(part))+`)`, Args(nil, part)[1:]...); err != nil {
			return fmt.Errorf("record %d coupon.issued events: %w", len(part), err)
		}
	}
	return nil
}

// CouponEventsSQL records the events of the coupons a WHERE clause
// appended to it selects, of the type bound first and from the status
// bound second ("" for coupons issued), each at its coupon's
// updated_at, as the change left the coupon: a copy of its columns into
// the outbox, one statement for a whole batch of coupons, on either
// engine.
const CouponEventsSQL = `INSERT INTO events (type, shop_no, user_id, object_id, created_at,
	template_id, seq, status, valid_start, valid_end, source, task_id, order_id, locked_until, discount, coupon_created_at, old_status)
	SELECT ?, shop_no, user_id, id, updated_at,
	template_id, seq, status, valid_start, valid_end, source, task_id, order_id, locked_until, discount, created_at, ?
	FROM coupons WHERE `

// RecordCouponEvents records, in tx, the events of the coupons after
// whose status changed from old[i], as they are stored now: one
// INSERT … SELECT per event type.
func RecordCouponEvents(ctx context.Context, tx Execer, old []quan.CouponStatus, after []*quan.Coupon) error {
	type change struct {
		t   quan.EventType
		old quan.CouponStatus
	}
	by := map[change][]int64{}
	var changes []change
	for i, c := range after {
		k := change{quan.CouponEventType(old[i], c.Status), old[i]}
		if k.t == "" {
			continue
		}
		if _, ok := by[k]; !ok {
			changes = append(changes, k)
		}
		by[k] = append(by[k], c.ID)
	}
	for _, k := range changes {
		if err := RecordEventsOf(ctx, tx, k.t, k.old, by[k]); err != nil {
			return err
		}
	}
	return nil
}

// RecordEventsOf records, in tx, events of type t from status old of
// the coupons ids as they are stored now, batches of at most 500 a
// statement.
func RecordEventsOf(ctx context.Context, tx Execer, t quan.EventType, old quan.CouponStatus, ids []int64) error {
	for part := range slices.Chunk(ids, 500) {
		args := append([]any{t, old}, Args(nil, part)[1:]...)
		if _, err := tx.ExecContext(ctx, CouponEventsSQL+`id IN (`+Params(len(part))+`)`, args...); err != nil {
			return fmt.Errorf("record %d %s events: %w", len(part), t, err)
		}
	}
	return nil
}

// RecordEvent records e (a task's or a template's, with its Data) in tx,
// created at at: e.CreatedAt as the engine keeps times.
func RecordEvent(ctx context.Context, tx Execer, e *quan.Event, at any) error {
	if e == nil {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO events (type, shop_no, user_id, object_id, created_at, data) VALUES (?, ?, ?, ?, ?, ?)`,
		e.Type, e.ShopNo, e.UserID, e.ObjectID, at, string(e.Data)); err != nil {
		return fmt.Errorf("record the %s event of %d: %w", e.Type, e.ObjectID, err)
	}
	return nil
}

// CouponStatuses returns the statuses of cs.
func CouponStatuses(cs []*quan.Coupon) []quan.CouponStatus {
	out := make([]quan.CouponStatus, len(cs))
	for i, c := range cs {
		out[i] = c.Status
	}
	return out
}

// EventRow is an event as read, with its coupon if it is a coupon's: the
// coupon's code is not stored but made (Codes.Fill) before its Data is.
type EventRow struct {
	Event  *quan.Event
	Coupon *quan.Coupon
}

// ScanEvent reads a row of EventColumns.
func ScanEvent(row Scanner) (EventRow, error) {
	var (
		e                                quan.Event
		data, status, source, order, old sql.NullString
		template, seq, task, discount    sql.NullInt64
		c                                quan.Coupon
	)
	if err := row.Scan(&e.Seq, &e.Type, &e.ShopNo, &e.UserID, &e.ObjectID, Time(&e.CreatedAt), &e.Attempts, &data,
		&template, &seq, &status, NullTime(&c.ValidStart), NullTime(&c.ValidEnd), &source, &task, &order,
		NullTime(&c.LockedUntil), &discount, NullTime(&c.CreatedAt), &old); err != nil {
		return EventRow{}, err
	}
	if !e.Type.Coupon() {
		e.Data = json.RawMessage(data.String)
		return EventRow{Event: &e}, nil
	}
	e.Previous = quan.CouponStatus(old.String)
	c.ID, c.ShopNo, c.UserID, c.UpdatedAt = e.ObjectID, e.ShopNo, e.UserID, e.CreatedAt
	if e.Type == quan.EventCouponIssued {
		c.CreatedAt = e.CreatedAt
	}
	c.TemplateID, c.Seq, c.Status, c.Source = template.Int64, seq.Int64, quan.CouponStatus(status.String), quan.CouponSource(source.String)
	c.TaskID, c.OrderID, c.Discount = task.Int64, order.String, discount.Int64
	return EventRow{Event: &e, Coupon: &c}, nil
}

// EventData fills the codes of the coupons of rs with codes (in q) and
// sets every coupon event's Data to its coupon's JSON; it returns the
// events.
func EventData(ctx context.Context, q Queryer, codes *Codes, rs []EventRow) ([]*quan.Event, error) {
	var cs []*quan.Coupon
	for _, r := range rs {
		if r.Coupon != nil {
			cs = append(cs, r.Coupon)
		}
	}
	if len(cs) > 0 {
		if err := codes.Fill(ctx, q, cs); err != nil {
			return nil, fmt.Errorf("the codes of %d coupon events: %w", len(cs), err)
		}
	}
	out := make([]*quan.Event, len(rs))
	for i, r := range rs {
		if r.Coupon != nil {
			data, err := json.Marshal(r.Coupon)
			if err != nil {
				return nil, fmt.Errorf("event %d: %w", r.Event.Seq, err)
			}
			r.Event.Data, r.Event.Coupon = data, r.Coupon
		}
		out[i] = r.Event
	}
	return out, nil
}

// FinishEvents marks relayed at the events seqs owner holds, in tx.
func FinishEvents(ctx context.Context, tx Execer, owner string, at any, seqs []int64) (int, error) {
	n := 0
	for part := range slices.Chunk(seqs, 500) {
		args := append([]any{at, owner}, Args(nil, part)[1:]...)
		res, err := tx.ExecContext(ctx, `UPDATE events SET due_at = NULL, relayed_at = ?, owner = ''
			WHERE owner = ? AND due_at IS NOT NULL AND id IN (`+Params(len(part))+`)`, args...)
		if err != nil {
			return n, fmt.Errorf("finish events: %w", err)
		}
		k, err := res.RowsAffected()
		if err != nil {
			return n, fmt.Errorf("finish events: %w", err)
		}
		n += int(k)
	}
	return n, nil
}

// PendingEvents counts the events not relayed, and reads the oldest's
// time.
func PendingEvents(ctx context.Context, q Queryer) (int64, time.Time, error) {
	rows, err := q.QueryContext(ctx, `SELECT count(*) FROM events WHERE due_at IS NOT NULL`)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("pending events: %w", err)
	}
	var n int64
	if err := one(rows, &n); err != nil {
		return 0, time.Time{}, fmt.Errorf("pending events: %w", err)
	}
	if n == 0 {
		return 0, time.Time{}, nil
	}
	rows, err = q.QueryContext(ctx, `SELECT created_at FROM events WHERE id = (SELECT min(id) FROM events WHERE due_at IS NOT NULL)`)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("pending events: %w", err)
	}
	var oldest time.Time
	if err := one(rows, Time(&oldest)); err != nil {
		return 0, time.Time{}, fmt.Errorf("pending events: the oldest: %w", err)
	}
	return n, oldest, nil
}

// one reads the one row of rows into dest; no row leaves dest alone.
func one(rows *sql.Rows, dest ...any) error {
	defer rows.Close()
	if rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return err
		}
	}
	return rows.Err()
}
