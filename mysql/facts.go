package mysql

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/sqlrow"
)

var _ quan.FactsStore = (*Store)(nil)

// factsPutBatch is the most users one INSERT of PutUserFacts carries: at
// most about 7 KB a user (50 tags and 50 attrs of 64 bytes, JSON quoted),
// so a statement stays under 4 MB, the smallest max_allowed_packet of a
// supported server.
const factsPutBatch = 500

// putFactsSQL inserts n users' facts, replacing those on file.
func putFactsSQL(n int) string {
	return sqlrow.InsertFacts(n) + ` ON DUPLICATE KEY UPDATE level = VALUES(level), tags = VALUES(tags),
		registered_at = VALUES(registered_at), region = VALUES(region), orders = VALUES(orders),
		attrs = VALUES(attrs), updated_at = VALUES(updated_at)`
}

// PutUserFacts implements quan.FactsStore: one transaction,
// factsPutBatch users a statement, in user id order so that concurrent
// puts lock rows in the same order; a deadlock all the same (on the gap
// before new users) is retried by inTx.
func (s *Store) PutUserFacts(ctx context.Context, now time.Time, facts []quan.UserFacts) (err error) {
	defer s.db.unavailable(&err)
	if len(facts) == 0 {
		return nil
	}
	sorted := slices.SortedFunc(slices.Values(facts), func(a, b quan.UserFacts) int { return cmp.Compare(a.UserID, b.UserID) })
	stmts := make([][]any, 0, (len(sorted)+factsPutBatch-1)/factsPutBatch)
	for start := 0; start < len(sorted); start += factsPutBatch {
		args, err := sqlrow.FactsRows(sorted[start:min(start+factsPutBatch, len(sorted))], now, utc)
		if err != nil {
			return fmt.Errorf("put user facts: %w", err)
		}
		stmts = append(stmts, args)
	}
	return s.db.inTx(ctx, func(tx *sql.Tx) error {
		for _, args := range stmts {
			if _, err := tx.ExecContext(ctx, putFactsSQL(len(args)/8), args...); err != nil {
				return fmt.Errorf("put user facts: %w", err)
			}
		}
		return nil
	})
}

// UserFacts implements quan.FactsStore.
func (s *Store) UserFacts(ctx context.Context, users []int64) (_ map[int64]*quan.UserFacts, err error) {
	defer s.db.unavailable(&err)
	return sqlrow.FactsOf(ctx, s.db.db, users)
}

// factsDialect compares the region as bytes: utf8mb4_bin pads, so that
// region = 'sh' would hold of "sh ". It states a tag condition with
// JSON_CONTAINS, which compares the stored JSON strings as they are
// written, escapes and all (MariaDB finds no "a&b" in ["a\u0026b"]):
// exact for a tag that is written without escapes (sqlrow.PlainTag), and
// left to the rule for any other.
var factsDialect = sqlrow.FactsDialect{
	RegionIs: `region = BINARY ?`,
	HasTag: func(tag string) (string, []any, bool) {
		return `JSON_CONTAINS(tags, JSON_QUOTE(?))`, []any{tag}, sqlrow.PlainTag(tag)
	},
}

// ScanUserFacts implements quan.FactsStore: a range of the primary
// key, filter.Where in SQL.
func (s *Store) ScanUserFacts(ctx context.Context, after int64, limit int, filter quan.FactsFilter) (_ []quan.UserFacts, err error) {
	defer s.db.unavailable(&err)
	return sqlrow.ScanFactsAfter(ctx, s.db.db, factsDialect, after, limit, filter)
}

// ExactFilter implements quan.FactsStore.
func (s *Store) ExactFilter(where []quan.FactsClause) bool {
	return sqlrow.ExactWhere(where, factsDialect)
}

// CountUserFacts implements quan.FactsStore.
func (s *Store) CountUserFacts(ctx context.Context) (_ int64, err error) {
	defer s.db.unavailable(&err)
	return sqlrow.CountFacts(ctx, s.db.db)
}

// SplitUserFacts implements quan.FactsStore.
func (s *Store) SplitUserFacts(ctx context.Context, parts int) (_ []int64, err error) {
	defer s.db.unavailable(&err)
	return sqlrow.SplitFacts(ctx, s.db.db, parts)
}
