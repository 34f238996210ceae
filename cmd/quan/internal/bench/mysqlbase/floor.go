package mysqlbase

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/mysql"
)

// floorTable is the scratch table IngestFloor fills and drops.
const floorTable = "coupons_floor"

// IngestFloor measures the raw-ingest floor of a distribution: how long
// its coupons take to insert when nothing else is done, no task, ledger,
// template or failure rows, no lookups, no locks. One coupon per user,
// with proto's receive sequence and other columns, goes in users' order as
// plain multi-row INSERTs of mysql.InsertRows rows, each its own
// transaction, the statements spread over conns connections, into a
// scratch table coupons_floor created LIKE coupons (the same columns and
// indexes) and dropped afterwards. The statements are the store's, built
// by the same code (mysql.AppendCouponInsert).
//
// It returns the time from the first statement to the end of the last,
// and the rows a statement carries; creating and dropping the table are
// not timed. A coupons_floor left by a run that died is dropped first.
func (b *Baseline) IngestFloor(ctx context.Context, proto quan.Coupon, users []int64, conns int) (time.Duration, int, error) {
	fail := func(err error) (time.Duration, int, error) {
		return 0, 0, fmt.Errorf("measure the ingest floor: %w", err)
	}
	conns = max(conns, 1)
	// The statement of the first batch, built before the clock starts,
	// refuses a proto the store would not write.
	if _, err := mysql.AppendCouponInsert(nil, floorTable, &proto, users[:min(len(users), 1)]); err != nil {
		return fail(err)
	}
	if _, err := b.db.ExecContext(ctx, `DROP TABLE IF EXISTS `+floorTable); err != nil {
		return fail(err)
	}
	if _, err := b.db.ExecContext(ctx, `CREATE TABLE `+floorTable+` LIKE coupons`); err != nil {
		return fail(err)
	}
	defer b.db.ExecContext(context.WithoutCancel(ctx), `DROP TABLE IF EXISTS `+floorTable)
	// One connection per inserter, taken before the clock starts.
	if b.db.Stats().MaxOpenConnections < conns {
		b.db.SetMaxOpenConns(conns)
		b.db.SetMaxIdleConns(conns)
	}
	cs := make([]*sql.Conn, conns)
	for i := range cs {
		var err error
		if cs[i], err = b.db.Conn(ctx); err != nil {
			return fail(err)
		}
		defer cs[i].Close()
	}

	batches := make(chan []int64)
	errs := make(chan error, conns)
	insertCtx, stop := context.WithCancel(ctx) // the first error stops the rest
	defer stop()
	var wg sync.WaitGroup
	start := time.Now()
	for _, conn := range cs {
		wg.Go(func() {
			var s []byte
			for batch := range batches {
				var err error
				if s, err = mysql.AppendCouponInsert(s[:0], floorTable, &proto, batch); err == nil {
					_, err = conn.ExecContext(insertCtx, string(s))
				}
				if err != nil {
					errs <- fmt.Errorf("insert %d rows: %w", len(batch), err)
					stop()
					return
				}
			}
		})
	}
	wg.Go(func() {
		defer close(batches)
		for rest := users; len(rest) > 0; {
			batch := rest[:min(len(rest), mysql.InsertRows)]
			rest = rest[len(batch):]
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
	return took, mysql.InsertRows, nil
}
