package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"slices"

	"github.com/quanhq/quan/internal/sqlrow"
)

// RefuseLoad makes db write coupons as a server with local_infile=OFF
// has it do, by INSERT, without changing the server.
func RefuseLoad(db *DB) { db.noLoad.Store(true) }

// ReadBackIDs makes db read the ids of the coupons a claim batch inserts
// back, as on a server that does not hand out consecutive ids.
func ReadBackIDs(db *DB) { db.consecutiveIDs.Store(false) }

// ConsecutiveIDs reports whether db takes coupon ids from LAST_INSERT_ID.
func ConsecutiveIDs(db *DB) bool { return db.consecutiveIDs.Load() }

// InTx runs fn as the store runs its transactions, retries and all.
func InTx(ctx context.Context, db *DB, fn func(*sql.Tx) error) error { return db.inTx(ctx, fn) }

// CountedSwaps reports how many swaps db wrote with their counters in one
// statement.
func CountedSwaps(db *DB) int64 { return db.countedSwaps.Load() }

// Reapply applies the migration named name again, on one connection, as
// migrate applies it: for a test of what it makes of older data.
func Reapply(ctx context.Context, db *DB, name string) error {
	ms, err := sqlrow.Migrations(migrationFiles, "migrations")
	if err != nil {
		return err
	}
	i := slices.IndexFunc(ms, func(m sqlrow.Migration) bool { return m.Name == name })
	if i < 0 {
		return fmt.Errorf("no migration %s", name)
	}
	conn, err := db.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	for n, s := range splitStatements(ms[i].SQL) {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s: statement %d: %w", name, n+1, err)
		}
	}
	return nil
}
