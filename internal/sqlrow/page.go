package sqlrow

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/quanhq/quan"
)

// Page returns one page of the rows of table matching where, newest
// (highest id) first, read by scan from the columns listed, and the number
// of all matches. It reads in one
// read-only transaction, so the page and the total see the same snapshot.
// limit is cut to quan.MaxPageSize (0 means quan.DefaultPageSize) and a
// negative offset counts as 0; the result is an empty, non-nil slice when
// nothing is on the page. what names the rows in errors ("templates").
//
// Its two statements, SELECT count(*) and SELECT … ORDER BY id DESC LIMIT
// ? OFFSET ?, read the same on SQLite and MySQL.
func Page[T any](ctx context.Context, db *sql.DB, what, table, columns string, where Where,
	offset, limit int, scan func(Scanner) (T, error)) ([]T, int, error) {
	return PageBy(ctx, db, what, table, columns, where, `id DESC`, offset, limit, scan)
}

// PageBy is Page with the rows in the order of orderBy, an ORDER BY list
// such as "name_key, id" that must order the rows completely, so that
// pages neither skip nor repeat one.
func PageBy[T any](ctx context.Context, db *sql.DB, what, table, columns string, where Where, orderBy string,
	offset, limit int, scan func(Scanner) (T, error)) ([]T, int, error) {
	if limit <= 0 {
		limit = quan.DefaultPageSize
	}
	limit = min(limit, quan.MaxPageSize)
	offset = max(offset, 0)

	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, 0, fmt.Errorf("list %s: %w", what, err)
	}
	defer tx.Rollback()

	var total int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM `+table+where.String(), where.Args()...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("list %s: count: %w", what, err)
	}
	if offset >= total {
		return []T{}, total, nil
	}
	items, err := Query(ctx, tx, "list "+what, scan,
		`SELECT `+columns+` FROM `+table+where.String()+` ORDER BY `+orderBy+` LIMIT ? OFFSET ?`,
		append(where.Args(), limit, offset)...)
	if err != nil {
		return nil, 0, err
	}
	return items, total, nil
}
