// Package sqlrow holds what quan's two SQL stores, sqlite and mysql, share
// below their SQL: reading rows into quan's types, paging, the JSON of
// audit entries and the arguments of statements. The SQL stays in each
// store, where its engine's dialect is visible; a function here that reads
// a row names the columns it expects, in order, and the store's SELECT
// lists them so. Driver errors are the stores' to translate: the functions
// here return them as they are, or wrapped with what was being read.
package sqlrow

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/quanhq/quan"
)

// Scanner is a *sql.Row or *sql.Rows: what the Scan functions read a row
// from.
type Scanner interface {
	Scan(dest ...any) error
}

// Queryer is a *sql.DB, *sql.Conn or *sql.Tx.
type Queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// All reads every row of rows with scan and closes rows. It returns an
// empty, non-nil slice when there are none, and the first error of scan or
// of the rows.
func All[T any](rows *sql.Rows, scan func(Scanner) (T, error)) ([]T, error) {
	defer rows.Close()
	items := []T{}
	for rows.Next() {
		item, err := scan(rows)
		if err != nil {
			return nil, err
		}
		items = append(items, item)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return items, nil
}

// Query runs query on q and reads its rows with scan, as All does. Errors
// are wrapped with what, which names what the rows are ("tasks").
func Query[T any](ctx context.Context, q Queryer, what string, scan func(Scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	items, err := All(rows, scan)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return items, nil
}

// Int64 reads a row of one integer column.
func Int64(row Scanner) (int64, error) {
	var n int64
	err := row.Scan(&n)
	return n, err
}

// One reads row, the row of what id ("template", "task"), with scan. No
// row is an error wrapping quan.ErrNotFound, "template 7: not found";
// another error is wrapped "read template 7: …".
func One[T any](row Scanner, what string, id int64, scan func(Scanner) (T, error)) (T, error) {
	item, err := scan(row)
	if errors.Is(err, sql.ErrNoRows) {
		return item, fmt.Errorf("%s %d: %w", what, id, quan.ErrNotFound)
	}
	if err != nil {
		return item, fmt.Errorf("read %s %d: %w", what, id, err)
	}
	return item, nil
}

// ScanTail scans a row with one column more than the reader R asks for:
// the last column goes into Tail.
type ScanTail struct {
	R    Scanner
	Tail any
}

// Scan implements Scanner.
func (s ScanTail) Scan(dest ...any) error { return s.R.Scan(append(dest, s.Tail)...) }
