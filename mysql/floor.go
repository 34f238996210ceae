package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/quanhq/quan"
)

// floorTable is the scratch table MeasureFloor fills and drops.
const floorTable = "coupons_floor"

// MeasureFloor measures the raw-ingest floor of a distribution: how long
// its coupons take to insert when nothing else is done, no task, ledger,
// template or failure rows, no lookups, no locks. One coupon per user,
// receive sequence 1 and proto's other columns, goes in users' order as
// plain multi-row INSERTs of batchRows rows, each its own transaction,
// the statements spread over conns connections, into a scratch table
// coupons_floor created LIKE coupons (the same columns and indexes) and
// dropped afterwards. The statements are issueChunk's, built by the same
// code.
//
// It returns the time from the first statement to the end of the last;
// creating and dropping the table are not timed. A coupons_floor left by
// a run that died is dropped first. For benchmarks.
func (db *DB) MeasureFloor(ctx context.Context, proto quan.Coupon, users []int64, conns int) (time.Duration, error) {
	fail := func(err error) (time.Duration, error) {
		return 0, fmt.Errorf("measure the ingest floor: %w", err)
	}
	conns = max(conns, 1)
	tail, err := couponTail(&proto, false)
	if err != nil {
		return fail(err)
	}
	rows := make([]userSeq, len(users))
	for i, u := range users {
		rows[i] = userSeq{u, 1}
	}

	if _, err := db.db.ExecContext(ctx, `DROP TABLE IF EXISTS `+floorTable); err != nil {
		return fail(err)
	}
	if _, err := db.db.ExecContext(ctx, `CREATE TABLE `+floorTable+` LIKE coupons`); err != nil {
		return fail(err)
	}
	defer db.db.ExecContext(context.WithoutCancel(ctx), `DROP TABLE IF EXISTS `+floorTable)
	// One connection per inserter, taken before the clock starts.
	cs := make([]*sql.Conn, conns)
	for i := range cs {
		if cs[i], err = db.db.Conn(ctx); err != nil {
			return fail(err)
		}
		defer cs[i].Close()
	}

	batches := make(chan []userSeq)
	errs := make(chan error, conns)
	insertCtx, stop := context.WithCancel(ctx) // the first error stops the rest
	defer stop()
	var wg sync.WaitGroup
	start := time.Now()
	for _, conn := range cs {
		wg.Go(func() {
			var b []byte
			for batch := range batches {
				b = appendCouponInsert(b[:0], floorTable, batch, tail, "")
				if _, err := conn.ExecContext(insertCtx, string(b)); err != nil {
					errs <- fmt.Errorf("insert %d rows: %w", len(batch), err)
					stop()
					return
				}
			}
		})
	}
	wg.Go(func() {
		defer close(batches)
		for len(rows) > 0 {
			batch := rows[:min(len(rows), batchRows)]
			rows = rows[len(batch):]
			select {
			case batches <- batch:
			case <-insertCtx.Done():
				return
			}
		}
	})
	wg.Wait()
	took := time.Since(start)
	close(errs)
	if err := errors.Join(ctx.Err(), <-errs); err != nil {
		return fail(err)
	}
	return took, nil
}
