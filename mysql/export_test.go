package mysql

import (
	"context"
	"database/sql"
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
