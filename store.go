package quan

import (
	"context"
	"time"
)

// TemplateStore keeps templates and their audit trail.
//
// Every merchant-facing method takes a shop number and sees only that
// shop's templates: a template of another shop is ErrNotFound, never
// ErrForbidden, so its existence is not revealed. AnyShop lifts the limit.
type TemplateStore interface {
	// CreateTemplate stores t, setting its ID, and records an audit entry
	// by actor in the same transaction, at t.CreatedAt.
	CreateTemplate(ctx context.Context, t *Template, actor string) error

	// Template returns the template id of shop, or ErrNotFound.
	Template(ctx context.Context, shop, id int64) (*Template, error)

	// Templates returns one page of the templates matching f, newest first,
	// and the number of all matches. A Limit above MaxPageSize is cut to it.
	Templates(ctx context.Context, f TemplateFilter) ([]*Template, int, error)

	// UpdateTemplate loads template id of shop, locks it, and calls fn with
	// it. If fn returns nil the changed template is saved, together with an
	// audit entry by actor for action listing the changed fields; the saved
	// template is returned. If fn fails nothing is written and its error is
	// returned. ErrNotFound if there is no such template. The entry's time
	// is the saved template's UpdatedAt. fn must not change ID or ShopNo and
	// must not call the store: it runs under the template's lock.
	UpdateTemplate(ctx context.Context, shop, id int64, actor, action string, fn func(*Template) error) (*Template, error)

	// AdjustStock adds delta (negative to take) to the stock of template
	// id and returns the stock left. Stock never falls below zero: a take
	// larger than the stock changes nothing and returns ErrOutOfStock. It
	// leaves TotalStock alone and writes no audit entry: issuing coupons is
	// not a template change.
	AdjustStock(ctx context.Context, id, delta int64) (int64, error)

	// TemplateHistory returns the audit entries of template id of shop,
	// oldest first, or ErrNotFound.
	TemplateHistory(ctx context.Context, shop, id int64) ([]*AuditEntry, error)

	// Ping reports whether the store is reachable.
	Ping(ctx context.Context) error
}

// TemplateFilter selects templates. ShopNo is required for merchants;
// AnyShop (0) matches every shop.
type TemplateFilter struct {
	ShopNo       int64
	Status       TemplateStatus // "" matches any
	Kind         Kind           // "" matches any
	NameContains string         // case-insensitive for ASCII; "" matches any
	Offset       int
	Limit        int // 1 … MaxPageSize; 0 means DefaultPageSize
}

// Paging defaults.
const (
	DefaultPageSize = 20
	MaxPageSize     = 100
)

// Clock returns the current time. Use cases take one so tests never sleep.
type Clock func() time.Time
