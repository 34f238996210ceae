package http

import (
	"net/http"

	"github.com/quanhq/quan"
)

// Access is who may call a route. The handler may narrow it further (a
// merchant sees its own shop's templates only, a shop's key its own
// shop's coupons), never widen it.
type Access struct {
	Public   bool          // anyone, without a token (a probe, a signed link)
	Shopper  bool          // a user's token: the shopper's app
	Merchant bool          // a merchant's token: a shop's operator
	Admin    bool          // an admin's token: the platform's operator
	Scope    quan.KeyScope // a service key holding this scope; "" for none
}

// Policy returns who may call each route, by its pattern: the one table
// of who may do what. Every route the server registers has its row, the
// server enforces it before the handler runs (Server.allowed), and
// docs/reference.md shows it (TestPolicyIsDocumented).
func Policy() map[string]Access {
	public := Access{Public: true}
	shopper := Access{Shopper: true}
	staff := func(scope quan.KeyScope) Access { return Access{Merchant: true, Admin: true, Scope: scope} }
	admin := Access{Admin: true}
	key := func(scope quan.KeyScope) Access { return Access{Scope: scope} }
	// A shopper searches and reads the public view of active templates.
	shopperToo := func(a Access) Access { a.Shopper = true; return a }
	return map[string]Access{
		"GET /healthz":                               public,
		"GET /readyz":                                public,
		"GET /api/v1/openapi.json":                   public,
		"GET /api/v1/unsubscribe":                    public,
		"POST /api/v1/unsubscribe":                   public,
		"POST /api/v1/templates":                     staff(quan.ScopeTemplates),
		"GET /api/v1/templates":                      shopperToo(staff(quan.ScopeTemplates)),
		"GET /api/v1/templates/{id}":                 shopperToo(staff(quan.ScopeTemplates)),
		"PATCH /api/v1/templates/{id}":               staff(quan.ScopeTemplates),
		"POST /api/v1/templates/{id}/activate":       staff(quan.ScopeTemplates),
		"POST /api/v1/templates/{id}/pause":          staff(quan.ScopeTemplates),
		"POST /api/v1/templates/{id}/resume":         staff(quan.ScopeTemplates),
		"POST /api/v1/templates/{id}/terminate":      staff(quan.ScopeTemplates),
		"POST /api/v1/templates/{id}/stock":          staff(quan.ScopeTemplates),
		"GET /api/v1/templates/{id}/history":         staff(quan.ScopeTemplates),
		"GET /api/v1/templates/{id}/rules":           staff(quan.ScopeTemplates),
		"POST /api/v1/templates/{id}/rules":          staff(quan.ScopeTemplates),
		"POST /api/v1/templates/{id}/rules/evaluate": staff(quan.ScopeTemplates),
		"GET /api/v1/templates/{id}/stats":           staff(quan.ScopeTemplates),
		"GET /api/v1/stats":                          staff(quan.ScopeTemplates),
		"POST /api/v1/templates/{id}/code-batches":   staff(quan.ScopeTemplates),
		"GET /api/v1/code-batches/{id}":              staff(quan.ScopeTemplates),
		"GET /api/v1/code-batches/{id}/codes.csv":    staff(quan.ScopeTemplates),
		"GET /api/v1/code-batches/{id}/codes.xlsx":   staff(quan.ScopeTemplates),

		"POST /api/v1/tasks":                                 staff(quan.ScopeTasks),
		"GET /api/v1/tasks":                                  staff(quan.ScopeTasks),
		"GET /api/v1/tasks/{id}":                             staff(quan.ScopeTasks),
		"POST /api/v1/tasks/{id}/cancel":                     staff(quan.ScopeTasks),
		"GET /api/v1/tasks/{id}/failures.xlsx":               staff(quan.ScopeTasks),
		"GET /api/v1/tasks/{id}/failures.csv":                staff(quan.ScopeTasks),
		"POST /api/v1/tasks/{id}/retry":                      staff(quan.ScopeTasks),
		"GET /api/v1/tasks/{id}/notifications":               staff(quan.ScopeTasks),
		"GET /api/v1/tasks/{id}/notifications/failures.csv":  staff(quan.ScopeTasks),
		"GET /api/v1/tasks/{id}/notifications/failures.xlsx": staff(quan.ScopeTasks),

		"POST /api/v1/templates/{id}/claim":     {Shopper: true, Scope: quan.ScopeClaims},
		"GET /api/v1/claims/{id}":               {Shopper: true, Scope: quan.ScopeClaims},
		"POST /api/v1/codes/redeem":             shopper,
		"POST /api/v1/promo-codes/{code}/claim": shopper,
		"GET /api/v1/me/coupons":                shopper,
		"GET /api/v1/me/coupons/{id}":           shopper,
		"GET /api/v1/me/claimable":              shopper,
		"POST /api/v1/settlement/quote":         shopper,

		"POST /api/v1/orders/{order}/lock":    key(quan.ScopeSettlement),
		"POST /api/v1/orders/{order}/redeem":  key(quan.ScopeSettlement),
		"POST /api/v1/orders/{order}/release": key(quan.ScopeSettlement),
		"POST /api/v1/orders/{order}/refund":  key(quan.ScopeSettlement),

		"GET /api/v1/coupons/by-code/{code}":         staff(quan.ScopeCouponsRead),
		"GET /api/v1/coupons":                        staff(quan.ScopeCouponsRead),
		"GET /api/v1/coupons/{id}":                   staff(quan.ScopeCouponsRead),
		"POST /api/v1/coupons/{id}/revoke":           {Merchant: true, Admin: true},
		"POST /api/v1/coupons/by-code/{code}/redeem": key(quan.ScopeRedeem),

		"GET /api/v1/me/contact":              shopper,
		"PUT /api/v1/me/contact":              shopper,
		"GET /api/v1/users/{id}/contact":      {Shopper: true, Admin: true},
		"PUT /api/v1/users/{id}/contact":      {Shopper: true, Admin: true},
		"POST /api/v1/contacts/import":        admin,
		"GET /api/v1/me/inbox":                shopper,
		"GET /api/v1/me/inbox/unread-count":   shopper,
		"POST /api/v1/me/inbox/read":          shopper,
		"GET /api/v1/me/popups":               shopper,
		"POST /api/v1/me/popups/{id}/ack":     shopper,
		"GET /api/v1/users/{id}/attributes":   {Shopper: true, Admin: true},
		"PUT /api/v1/users/{id}/attributes":   {Shopper: true, Admin: true},
		"POST /api/v1/attributes/import":      admin,
		"GET /api/v1/shops/{shopNo}/settings": {Merchant: true, Admin: true},
		"PUT /api/v1/shops/{shopNo}/settings": {Merchant: true, Admin: true},

		"POST /api/v1/templates/{id}/reminders":   shopper,
		"DELETE /api/v1/templates/{id}/reminders": shopper,
		"GET /api/v1/me/reminders":                shopper,

		"GET /api/v1/api-keys":              admin,
		"POST /api/v1/api-keys":             admin,
		"POST /api/v1/api-keys/{id}/revoke": admin,
	}
}

// allows returns nil if who may call a route of access a, else why not:
// EUNAUTHORIZED without an identity, EFORBIDDEN naming who may.
func (a Access) allows(who quan.Identity) error {
	if a.Public {
		return nil
	}
	ok := false
	switch who.Role {
	case "":
		return quan.Errorf(quan.EUNAUTHORIZED, "this needs a bearer token")
	case quan.RoleUser:
		ok = a.Shopper
	case quan.RoleMerchant:
		ok = a.Merchant
	case quan.RoleAdmin:
		ok = a.Admin
	case quan.RoleService:
		if a.Scope != "" && !who.HasScope(a.Scope) {
			return quan.Errorf(quan.EFORBIDDEN, "this service key lacks the %s scope", a.Scope)
		}
		ok = a.Scope != ""
	}
	if !ok {
		return quan.Errorf(quan.EFORBIDDEN, "a %s may not do this: %s", roleName(who.Role), a.Who())
	}
	return nil
}

// Who says who may call a route of access a, as the reference's table
// does.
func (a Access) Who() string {
	if a.Public {
		return "anyone"
	}
	var who []string
	if a.Shopper {
		who = append(who, "shopper")
	}
	if a.Merchant {
		who = append(who, "merchant")
	}
	if a.Admin {
		who = append(who, "admin")
	}
	if a.Scope != "" {
		who = append(who, "key:"+string(a.Scope))
	}
	if len(who) == 0 {
		return "no one"
	}
	s := who[0]
	for _, w := range who[1:] {
		s += ", " + w
	}
	return s
}

func roleName(r quan.Role) string {
	switch r {
	case quan.RoleUser:
		return "shopper's token"
	case quan.RoleService:
		return "service key"
	}
	return string(r) + "'s token"
}

// allowed wraps h with the check of access: the one place the table is
// enforced.
func allowed(access Access, h func(http.ResponseWriter, *http.Request) error) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		if err := access.allows(quan.IdentityFromContext(r.Context())); err != nil {
			return err
		}
		return h(w, r)
	}
}
