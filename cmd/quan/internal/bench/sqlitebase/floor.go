package sqlitebase

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/sqlite"
)

// floorTable is the table IngestFloor fills, in a database file of its
// own.
const floorTable = "coupons_floor"

// IngestFloor measures the raw-ingest floor of a distribution on SQLite:
// how long its coupons take to insert when nothing else is done: no task,
// ledger, template or failure rows, no lookups. One coupon per user, with
// proto's receive sequence and other columns, goes into a table with the
// columns and indexes of the store's coupons, in a new database file
// beside the store's with the store's writer settings (deleted after), in
// transactions of chunk users each, by the store's own statements
// (sqlite.InsertCoupons), in transactions of the store's chunk
// (sqlite.ChunkSize) on one connection: SQLite has one writer, so conns,
// the connections of engines that take more, is not used. It returns the
// time from the first transaction to the end of the last, and the rows a
// statement carries.
func (b *Baseline) IngestFloor(ctx context.Context, proto quan.Coupon, users []int64, conns int) (time.Duration, int, error) {
	const chunk = sqlite.ChunkSize
	fail := func(err error) (time.Duration, int, error) {
		return 0, 0, fmt.Errorf("measure the ingest floor: %w", err)
	}
	schema, err := couponSchema(ctx, b.db)
	if err != nil {
		return fail(err)
	}
	path := filepath.Join(filepath.Dir(b.path), "floor.db")
	removeDB(path)
	defer removeDB(path)
	db, err := sql.Open("sqlite", fileDSN(path, url.Values{"_pragma": sqlite.WriterPragmas(), "_txlock": {"immediate"}}))
	if err != nil {
		return fail(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, stmt := range schema {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return fail(fmt.Errorf("%s: %w", stmt, err))
		}
	}
	start := time.Now()
	for i := 0; i < len(users); i += chunk {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return fail(err)
		}
		if err := sqlite.InsertCoupons(ctx, tx, floorTable, &proto, users[i:min(i+chunk, len(users))]); err != nil {
			tx.Rollback()
			return fail(err)
		}
		if err := tx.Commit(); err != nil {
			return fail(err)
		}
	}
	return time.Since(start), sqlite.InsertBatchRows, nil
}

// couponName finds the coupons table in a CREATE statement.
var couponName = regexp.MustCompile(`(?i)^(CREATE (?:UNIQUE )?INDEX )(\w+)( ON )coupons\b|^(CREATE TABLE )coupons\b`)

// couponSchema returns the statements that create a table like coupons,
// named floorTable, with its indexes, as the store's database holds them.
func couponSchema(ctx context.Context, db *sql.DB) ([]string, error) {
	rows, err := db.QueryContext(ctx, `SELECT sql FROM sqlite_master WHERE tbl_name = 'coupons' AND sql IS NOT NULL ORDER BY type DESC`)
	if err != nil {
		return nil, fmt.Errorf("read the schema of coupons: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var stmt string
		if err := rows.Scan(&stmt); err != nil {
			return nil, err
		}
		renamed := couponName.ReplaceAllStringFunc(stmt, func(m string) string {
			sub := couponName.FindStringSubmatch(m)
			if sub[4] != "" {
				return sub[4] + floorTable
			}
			return sub[1] + sub[2] + "_floor" + sub[3] + floorTable
		})
		if renamed == stmt {
			return nil, fmt.Errorf("a statement of coupons not understood: %s", stmt)
		}
		out = append(out, renamed)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no table coupons: is the database migrated?")
	}
	return out, nil
}

// removeDB deletes a database file with its WAL and shared memory.
func removeDB(path string) {
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(path + suffix)
	}
}
