package quan

import (
	"context"
	"fmt"
)

// Role is what an identity may do.
type Role string

// Roles.
const (
	RoleMerchant Role = "merchant" // manages its own shop's templates and tasks
	RoleUser     Role = "user"     // holds and spends coupons
	RoleAdmin    Role = "admin"    // operates the platform, every shop
	// RoleService is a program holding a service key (APIKey): the
	// platform's, or one shop's, with the scopes of the key.
	RoleService Role = "service"
)

// Identity is who makes a request, as proven by a token.
type Identity struct {
	Subject string `json:"sub"`
	Role    Role   `json:"role"`
	ShopNo  int64  `json:"shopNo,omitempty"` // merchants only
	UserID  int64  `json:"userId,omitempty"` // users; a service key acting for one (ForUser)
	// KeyID and Scopes are a service key's (RoleService): ShopNo is then
	// the shop owning the key, 0 for the platform.
	KeyID  int64    `json:"keyId,omitempty"`
	Scopes ScopeSet `json:"scopes,omitempty"`
}

// HasScope reports whether id is a service key holding scope.
func (id Identity) HasScope(scope KeyScope) bool {
	return id.Role == RoleService && id.Scopes.Has(scope)
}

// ForUser returns id, a service key, acting for user in one request: the
// user a settlement or a claim by the key names.
func (id Identity) ForUser(user int64) Identity {
	id.UserID = user
	return id
}

// Holder returns the user whose coupons id acts on: a user's own, or the
// user a service key names (ForUser). EFORBIDDEN for anyone else.
func (id Identity) Holder() (int64, error) {
	switch {
	case id.Role == "":
		return 0, ErrUnauthorized
	case id.Role == RoleUser, id.Role == RoleService && id.UserID > 0:
		return id.UserID, nil
	}
	return 0, Errorf(EFORBIDDEN, "only users hold coupons")
}

// Reaches reports whether id may see what belongs to shop: anyone but a
// service key owned by another shop.
func (id Identity) Reaches(shop int64) bool {
	return id.Role != RoleService || id.ShopNo == 0 || id.ShopNo == shop
}

// Validate reports whether the identity is well formed for its role,
// with a subject that is one line of text (TextProblem): it is written
// into audit records as who did what.
func (id Identity) Validate() error {
	if p := TextProblem(id.Subject, ""); p != "" {
		return Errorf(EUNAUTHORIZED, "the identity's subject %s", p)
	}
	switch id.Role {
	case RoleMerchant:
		if id.ShopNo <= 0 {
			return Errorf(EUNAUTHORIZED, "a merchant identity needs a positive shop number")
		}
	case RoleUser:
		if id.UserID <= 0 {
			return Errorf(EUNAUTHORIZED, "a user identity needs a positive user id")
		}
	case RoleAdmin:
	case RoleService:
		if id.KeyID <= 0 || id.ShopNo < 0 {
			return Errorf(EUNAUTHORIZED, "a service key identity needs its key id")
		}
	default:
		return Errorf(EUNAUTHORIZED, "unknown role %q", id.Role)
	}
	return nil
}

// String names the identity for audit records, e.g. "merchant:1001", or
// "merchant:1001 (alice)" for a shop's operator signed in to the console
// as alice: a subject other than the default is shown, cut to 64
// characters.
func (id Identity) String() string {
	switch id.Role {
	case RoleMerchant:
		s := fmt.Sprintf("merchant:%d", id.ShopNo)
		if id.Subject != "" && id.Subject != s {
			sub := []rune(id.Subject)
			s += " (" + string(sub[:min(len(sub), 64)]) + ")"
		}
		return s
	case RoleUser:
		return fmt.Sprintf("user:%d", id.UserID)
	case RoleService:
		return fmt.Sprintf("key:%d", id.KeyID)
	}
	if id.Subject != "" {
		return string(id.Role) + ":" + id.Subject
	}
	return string(id.Role)
}

// ShopScope returns the shop a merchant-facing query is limited to: the
// merchant's own shop, or AnyShop for an admin. Users get ErrForbidden.
func (id Identity) ShopScope() (int64, error) {
	switch id.Role {
	case RoleMerchant:
		return id.ShopNo, nil
	case RoleAdmin:
		return AnyShop, nil
	case RoleService:
		return id.ShopNo, nil // AnyShop for the platform's keys
	case "":
		return 0, ErrUnauthorized
	}
	return 0, Errorf(EFORBIDDEN, "this needs a merchant or admin token")
}

// AnyShop, as a shop scope, lets a query see every shop. Only admins get it.
const AnyShop int64 = 0

type identityKey struct{}

// NewContextWithIdentity returns ctx carrying id.
func NewContextWithIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// IdentityFromContext returns the identity in ctx, the zero Identity if none.
func IdentityFromContext(ctx context.Context) Identity {
	id, _ := ctx.Value(identityKey{}).(Identity)
	return id
}

// RequireAdmin returns nil if who is an admin, else ErrUnauthorized
// without an identity or EFORBIDDEN saying that only an admin may do
// what ("import contacts").
func RequireAdmin(who Identity, what string) error {
	switch {
	case who.Role == "":
		return ErrUnauthorized
	case who.Role != RoleAdmin:
		return Errorf(EFORBIDDEN, "only an admin may %s", what)
	}
	return nil
}
