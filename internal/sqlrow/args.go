package sqlrow

import (
	"database/sql"
	"slices"
	"strings"

	"github.com/quanhq/quan"
)

// Params returns n comma-separated anonymous parameters, "?, ?, ?"; ""
// for n < 1.
func Params(n int) string {
	if n <= 0 {
		return ""
	}
	return strings.Repeat("?, ", n-1) + "?"
}

// OfShop returns query and its arguments, id then shop, with
// " AND shop_no = ?" appended unless shop is quan.AnyShop. query ends in
// a condition on id: "SELECT … WHERE id = ?".
func OfShop(query string, id, shop int64) (string, []any) {
	if shop == quan.AnyShop {
		return query, []any{id}
	}
	return query + ` AND shop_no = ?`, []any{id, shop}
}

// Args returns lead followed by ids: the arguments of a statement such as
// "… WHERE user_id = ? AND id IN (?, ?, …)".
func Args(lead any, ids []int64) []any {
	args := make([]any, 0, 1+len(ids))
	args = append(args, lead)
	for _, id := range ids {
		args = append(args, id)
	}
	return args
}

// NullString is s, NULL when empty: how the stores write an optional text
// column.
func NullString(s string) sql.NullString {
	return sql.NullString{String: s, Valid: s != ""}
}

// NullInt64 is n, NULL when 0: how the stores write an optional reference.
func NullInt64(n int64) sql.NullInt64 {
	return sql.NullInt64{Int64: n, Valid: n != 0}
}

// Where gathers the conditions of a WHERE clause, joined with AND, and
// their arguments. The zero Where has none.
type Where struct {
	conds []string
	args  []any
}

// If adds cond, with its arguments, when on.
func (w *Where) If(on bool, cond string, args ...any) {
	if on {
		w.conds = append(w.conds, cond)
		w.args = append(w.args, args...)
	}
}

// String returns " WHERE cond AND cond …", or "" with no conditions.
func (w Where) String() string {
	if len(w.conds) == 0 {
		return ""
	}
	return ` WHERE ` + strings.Join(w.conds, ` AND `)
}

// Args returns a new slice of the conditions' arguments, in order.
func (w Where) Args() []any { return slices.Clone(w.args) }
