package sqlrow

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/quanhq/quan"
)

// CodeKeyName is the name of the coupons' code secret in the stores'
// secrets table.
const CodeKeyName = "coupon_code"

// Codes gives coupons read from a store their codes: quan.CodeKey's code
// of the coupon's id and its template's prefix. A store opens one with
// its secret and fills every coupon it returns whole.
//
// It keeps the prefixes of the templates it has met. A template's prefix
// changes only while it is a draft (quan.Template.Edit), a draft issues no
// coupon (quan.IssueRefusal, quan.PlanChunk) and no template goes back to
// draft: the prefix of a template that has coupons is final, and the
// cache never goes stale, in this process or any other.
type Codes struct {
	Key *quan.CodeKey

	mu       sync.RWMutex
	prefixes map[int64]string
}

// OpenCodes returns the Codes of the key kept in the secrets table of db,
// which it makes first if the table has none: insert is the engine's
// statement that inserts (name, value) unless the name is there. Read
// back after that, the key is the one the first process to insert wrote,
// however many open a new database at once.
func OpenCodes(ctx context.Context, db *sql.DB, insert string) (*Codes, error) {
	const read = `SELECT value FROM secrets WHERE name = ?`
	var secret []byte
	err := db.QueryRowContext(ctx, read, CodeKeyName).Scan(&secret)
	if errors.Is(err, sql.ErrNoRows) {
		if _, err := db.ExecContext(ctx, insert, CodeKeyName, quan.NewCodeSecret()); err != nil {
			return nil, fmt.Errorf("make the code key: %w", err)
		}
		err = db.QueryRowContext(ctx, read, CodeKeyName).Scan(&secret)
	}
	if err != nil {
		return nil, fmt.Errorf("read the code key: %w", err)
	}
	key, err := quan.NewCodeKey(secret)
	if err != nil {
		return nil, err
	}
	return &Codes{Key: key}, nil
}

// maxPrefixes bounds the prefixes Codes keeps, some 50 bytes each; it
// starts again when full.
const maxPrefixes = 1 << 16

// Fill sets the Code of every coupon of cs, reading by q, with one
// query, the prefixes of their templates it does not know yet.
func (c *Codes) Fill(ctx context.Context, q Queryer, cs []*quan.Coupon) error {
	var pending []*quan.Coupon
	var missing []int64
	c.mu.RLock()
	for _, cp := range cs {
		if p, ok := c.prefixes[cp.TemplateID]; ok {
			cp.Code = c.Key.Code(cp.ID, p)
			continue
		}
		pending = append(pending, cp)
		if !slices.Contains(missing, cp.TemplateID) {
			missing = append(missing, cp.TemplateID)
		}
	}
	c.mu.RUnlock()
	if len(missing) == 0 {
		return nil
	}
	rows, err := q.QueryContext(ctx, `SELECT id, code_prefix FROM templates WHERE id IN (`+Params(len(missing))+`)`, Args(missing[0], missing[1:])...)
	if err != nil {
		return fmt.Errorf("the code prefixes of %d templates: %w", len(missing), err)
	}
	found := make(map[int64]string, len(missing))
	defer rows.Close()
	for rows.Next() {
		var (
			id     int64
			prefix string
		)
		if err := rows.Scan(&id, &prefix); err != nil {
			return fmt.Errorf("the code prefixes of %d templates: %w", len(missing), err)
		}
		found[id] = prefix
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("the code prefixes of %d templates: %w", len(missing), err)
	}
	for _, cp := range pending {
		p, ok := found[cp.TemplateID]
		if !ok {
			return fmt.Errorf("coupon %d: no template %d", cp.ID, cp.TemplateID)
		}
		cp.Code = c.Key.Code(cp.ID, p)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.prefixes == nil || len(c.prefixes)+len(found) > maxPrefixes {
		c.prefixes = make(map[int64]string, len(found))
	}
	maps.Copy(c.prefixes, found)
	return nil
}

// RedeemCodeOf reads code from redeem_codes through q (quan.CodeStore.Code):
// ErrNotFound if there is none.
func RedeemCodeOf(ctx context.Context, q Queryer, code string) (quan.RedeemCode, error) {
	rs, err := Query(ctx, q, "read code "+code, func(row Scanner) (quan.RedeemCode, error) {
		var c quan.RedeemCode
		err := row.Scan(&c.Code, &c.BatchID, &c.TemplateID, &c.UserID, &c.CouponID, NullTime(&c.RedeemedAt))
		return c, err
	}, `SELECT code, batch_id, template_id, user_id, coupon_id, redeemed_at FROM redeem_codes WHERE code = ?`, code)
	if err != nil {
		return quan.RedeemCode{}, err
	}
	if len(rs) == 0 {
		return quan.RedeemCode{}, fmt.Errorf("code %s: %w", code, quan.ErrNotFound)
	}
	return rs[0], nil
}
