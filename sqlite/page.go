package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/quanhq/quan"
)

// listPage returns one page of the rows of table matching conds (joined
// with AND), newest first, and the number of all matches. It reads in one
// read-only transaction, so the page and the total see the same snapshot.
// limit is cut to quan.MaxPageSize (0 means quan.DefaultPageSize); the
// result is an empty, non-nil slice when nothing is on the page.
//
// mysql/page.go holds the same function: adapters never import each other
// and the SQL is the same on both engines, so a shared helper package
// would only save these lines.
func listPage[T any](ctx context.Context, db *sql.DB, what, table, columns string, conds []string, args []any,
	offset, limit int, scan func(interface{ Scan(...any) error }) (T, error)) ([]T, int, error) {
	where := ""
	if len(conds) > 0 {
		where = ` WHERE ` + strings.Join(conds, ` AND `)
	}
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
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM `+table+where, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("list %s: count: %w", what, err)
	}
	items := []T{}
	if offset >= total {
		return items, total, nil
	}
	rows, err := tx.QueryContext(ctx,
		`SELECT `+columns+` FROM `+table+where+` ORDER BY id DESC LIMIT ? OFFSET ?`,
		append(args, limit, offset)...)
	if err != nil {
		return nil, 0, fmt.Errorf("list %s: %w", what, err)
	}
	defer rows.Close()
	for rows.Next() {
		item, err := scan(rows)
		if err != nil {
			return nil, 0, fmt.Errorf("list %s: %w", what, err)
		}
		items = append(items, item)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("list %s: %w", what, err)
	}
	return items, total, nil
}
