package sqlrow

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"

	"github.com/quanhq/quan"
)

// Execer is a *sql.DB, *sql.Conn or *sql.Tx.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Budgets remembers the budget of each template a store's wallet writes
// met: a budget is frozen once its template leaves draft, and only such
// templates have coupons, so an entry never goes stale. It holds one
// int64 a template. The zero value is ready.
type Budgets struct{ m sync.Map }

// Moves returns quan.BudgetMoves of the change of coupons from before to
// after, and the budget of each template they move (looked up in q the
// first time).
func (b *Budgets) Moves(ctx context.Context, q Execer, before, after []*quan.Coupon) ([]quan.BudgetMove, map[int64]int64, error) {
	var budgets map[int64]int64
	for i, a := range after {
		if a.Status == before[i].Status && a.Discount == before[i].Discount {
			continue
		}
		if _, ok := budgets[a.TemplateID]; ok {
			continue
		}
		v, ok := b.m.Load(a.TemplateID)
		if !ok {
			var n int64
			err := q.QueryRowContext(ctx, `SELECT budget FROM templates WHERE id = ?`, a.TemplateID).Scan(&n)
			if errors.Is(err, sql.ErrNoRows) {
				n, err = 0, nil
			}
			if err != nil {
				return nil, nil, fmt.Errorf("the budget of template %d: %w", a.TemplateID, err)
			}
			b.m.Store(a.TemplateID, n)
			v = n
		}
		if budgets == nil {
			budgets = map[int64]int64{}
		}
		budgets[a.TemplateID] = v.(int64)
	}
	if len(budgets) == 0 {
		return nil, nil, nil
	}
	moves := quan.BudgetMoves(before, after, func(t int64) bool { return budgets[t] > 0 })
	return moves, budgets, nil
}

// Budget SQL, the same on both engines: ?1 reserved, ?2 spent, ?3 the
// template, ?4 what the move takes (quan.BudgetMove.Takes) — positional,
// as MySQL has no numbered parameters.
const (
	moveBudgetSQL = `UPDATE template_budgets SET reserved = reserved + ?, spent = spent + ?
		WHERE template_id = ? AND reserved + spent + ? <= budget`
)

// MoveBudgets applies moves in q, the transaction that writes the coupons
// whose change they are: each in one UPDATE that changes nothing when the
// budget left cannot take it (quan.BudgetSpentError), so concurrent locks
// never overspend. insertIgnore is the engine's INSERT that leaves an
// existing row alone; the row of a template is made at its first move.
func MoveBudgets(ctx context.Context, q Execer, moves []quan.BudgetMove, budgets map[int64]int64, insertIgnore string) error {
	for _, m := range moves {
		for attempt := 0; ; attempt++ {
			res, err := q.ExecContext(ctx, moveBudgetSQL, m.Reserved, m.Spent, m.TemplateID, m.Takes())
			if err != nil {
				return fmt.Errorf("move the budget of template %d: %w", m.TemplateID, err)
			}
			n, err := res.RowsAffected()
			if err != nil {
				return fmt.Errorf("move the budget of template %d: %w", m.TemplateID, err)
			}
			if n == 1 {
				break
			}
			// No row yet, or the budget is spent. A plain read tells
			// which (no lock: an INSERT meeting the row would take a
			// shared lock that two refused lockers could deadlock on).
			var rows int
			if err := q.QueryRowContext(ctx, `SELECT count(*) FROM template_budgets WHERE template_id = ?`, m.TemplateID).Scan(&rows); err != nil {
				return fmt.Errorf("move the budget of template %d: %w", m.TemplateID, err)
			}
			if rows == 1 || attempt == 1 {
				return quan.BudgetSpentError(m.TemplateID)
			}
			if _, err := q.ExecContext(ctx, insertIgnore+` INTO template_budgets (template_id, budget) VALUES (?, ?)`,
				m.TemplateID, budgets[m.TemplateID]); err != nil {
				return fmt.Errorf("make the budget of template %d: %w", m.TemplateID, err)
			}
		}
	}
	return nil
}

// BudgetUsage reads the budget of template and what it holds; a template
// whose budget no move touched yet holds nothing, and one without a
// budget (or unknown) reads as zero.
func BudgetUsage(ctx context.Context, q Execer, template int64) (quan.BudgetUsage, error) {
	var u quan.BudgetUsage
	err := q.QueryRowContext(ctx, `SELECT budget, reserved, spent FROM template_budgets WHERE template_id = ?`, template).
		Scan(&u.Budget, &u.Reserved, &u.Spent)
	if errors.Is(err, sql.ErrNoRows) {
		err = q.QueryRowContext(ctx, `SELECT budget FROM templates WHERE id = ?`, template).Scan(&u.Budget)
		if errors.Is(err, sql.ErrNoRows) {
			return quan.BudgetUsage{}, nil
		}
	}
	if err != nil {
		return quan.BudgetUsage{}, fmt.Errorf("budget of template %d: %w", template, err)
	}
	return u, nil
}
