package sqlrow

import (
	"context"
	"fmt"
	"iter"
)

// Each yields the rows query finds on q, read by scan, as they come: the
// rows stay open while the caller consumes them. An error, of the query, a
// row or the rows, is yielded once, with the zero T and wrapped with what,
// and ends the sequence.
func Each[T any](ctx context.Context, q Queryer, what string, scan func(Scanner) (T, error), query string, args ...any) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		rows, err := q.QueryContext(ctx, query, args...)
		if err != nil {
			yield(zero, fmt.Errorf("%s: %w", what, err))
			return
		}
		defer rows.Close()
		for rows.Next() {
			item, err := scan(rows)
			if err != nil {
				yield(zero, fmt.Errorf("%s: %w", what, err))
				return
			}
			if !yield(item, nil) {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield(zero, fmt.Errorf("%s: %w", what, err))
		}
	}
}

// Keyset yields the rows of a query read size rows at a time, in the
// order of a key: query takes args and then the key of the last row
// yielded (start before the first), and returns the next rows in key
// order, at most size (its LIMIT). A page of fewer than size rows is the
// last. Each page's rows stay open while the caller consumes them. An
// error is yielded once, with the zero T and wrapped with what, and ends
// the sequence.
func Keyset[T, K any](ctx context.Context, q Queryer, what string, scan func(Scanner) (T, error), key func(T) K,
	start K, size int, query string, args ...any) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		after := start
		for {
			n := 0
			for item, err := range Each(ctx, q, what, scan, query, append(args[:len(args):len(args)], after)...) {
				if err != nil {
					yield(item, err)
					return
				}
				n++
				after = key(item)
				if !yield(item, nil) {
					return
				}
			}
			if n < size {
				return
			}
		}
	}
}
