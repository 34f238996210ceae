package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/sqlrow"
)

var _ quan.FactsStore = (*Store)(nil)

// factsPutBatch is the most users one INSERT of PutUserFacts carries: 8
// parameters a row, well under SQLite's 32,766.
const factsPutBatch = 1000

// putFactsSQL inserts n users' facts, replacing those on file.
func putFactsSQL(n int) string {
	return sqlrow.InsertFacts(n) + ` ON CONFLICT (user_id) DO UPDATE SET level = excluded.level, tags = excluded.tags,
		registered_at = excluded.registered_at, region = excluded.region, orders = excluded.orders,
		attrs = excluded.attrs, updated_at = excluded.updated_at`
}

// PutUserFacts implements quan.FactsStore: one write transaction,
// factsPutBatch users a statement.
func (s *Store) PutUserFacts(ctx context.Context, now time.Time, facts []quan.UserFacts) (err error) {
	defer s.db.unavailable(&err)
	if len(facts) == 0 {
		return nil
	}
	tx, err := s.db.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("put user facts: %w", err)
	}
	defer tx.Rollback()
	for start := 0; start < len(facts); start += factsPutBatch {
		part := facts[start:min(start+factsPutBatch, len(facts))]
		args, err := sqlrow.FactsRows(part, now, micros)
		if err != nil {
			return fmt.Errorf("put user facts: %w", err)
		}
		if _, err := tx.ExecContext(ctx, putFactsSQL(len(part)), args...); err != nil {
			return fmt.Errorf("put user facts: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("put user facts: commit: %w", err)
	}
	return nil
}

// UserFacts implements quan.FactsStore.
func (s *Store) UserFacts(ctx context.Context, users []int64) (_ map[int64]*quan.UserFacts, err error) {
	defer s.db.unavailable(&err)
	return sqlrow.FactsOf(ctx, s.db.read, users)
}

// factsDialect: region is TEXT of the BINARY collation, compared byte for
// byte.
var factsDialect = sqlrow.FactsDialect{RegionIs: `region = ?`, HasTag: hasTag}

// hasTag states a tag condition exactly for every tag. A plain tag
// (sqlrow.PlainTag) is an element of the tags' JSON as PutUserFacts writes
// it (encoding/json: compact, the tag as it is between quotes) exactly
// when the text holds ["tag" or ,"tag": within a string every quote is
// escaped, so neither can begin inside one, and the quote after the tag
// follows a character of it, never a backslash, so it ends the element.
// Two instr calls a row cost far less than json_each, which decodes the
// JSON and serves any other tag.
func hasTag(tag string) (string, []any, bool) {
	if sqlrow.PlainTag(tag) {
		return `(instr(tags, ?) > 0 OR instr(tags, ?) > 0)`, []any{`["` + tag + `"`, `,"` + tag + `"`}, true
	}
	return `EXISTS (SELECT 1 FROM json_each(tags) WHERE value = ?)`, []any{tag}, true
}

// ScanUserFacts implements quan.FactsStore: a range of the rowid,
// filter.Where in SQL.
func (s *Store) ScanUserFacts(ctx context.Context, after int64, limit int, filter quan.FactsFilter) (_ []quan.UserFacts, err error) {
	defer s.db.unavailable(&err)
	return sqlrow.ScanFactsAfter(ctx, s.db.read, factsDialect, after, limit, filter)
}

// ExactFilter implements quan.FactsStore.
func (s *Store) ExactFilter(where []quan.FactsClause) bool {
	return sqlrow.ExactWhere(where, factsDialect)
}

// CountUserFacts implements quan.FactsStore.
func (s *Store) CountUserFacts(ctx context.Context) (_ int64, err error) {
	defer s.db.unavailable(&err)
	return sqlrow.CountFacts(ctx, s.db.read)
}

// SplitUserFacts implements quan.FactsStore.
func (s *Store) SplitUserFacts(ctx context.Context, parts int) (_ []int64, err error) {
	defer s.db.unavailable(&err)
	return sqlrow.SplitFacts(ctx, s.db.read, parts)
}
