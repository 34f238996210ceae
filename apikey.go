package quan

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// KeyScope is what a service key may do. A key holds one or more.
type KeyScope string

// Scopes.
const (
	// ScopeSettlement locks, redeems, releases and refunds orders for the
	// user each request names: the order system's.
	ScopeSettlement KeyScope = "settlement"
	// ScopeRedeem redeems at a shop's counter the coupon a shopper shows
	// by its code (到店核销): a POS's.
	ScopeRedeem KeyScope = "redeem"
	// ScopeCouponsRead looks coupons up by their codes.
	ScopeCouponsRead KeyScope = "coupons:read"
	// ScopeTemplates manages templates, their rules, code batches and
	// statistics, as a merchant (or, for a platform key, an admin) does.
	ScopeTemplates KeyScope = "templates"
	// ScopeTasks runs bulk distributions, as a merchant does.
	ScopeTasks KeyScope = "tasks"
	// ScopeClaims claims coupons for the user each request names: a
	// platform server taking claims on its users' behalf.
	ScopeClaims KeyScope = "claims"
)

// AllScopes returns every scope, in the order the documentation lists them.
func AllScopes() []KeyScope {
	return []KeyScope{ScopeSettlement, ScopeRedeem, ScopeCouponsRead, ScopeTemplates, ScopeTasks, ScopeClaims}
}

// ParseScopes reads a comma-separated list of scopes ("settlement,redeem"),
// sorted and each once. EINVALID, naming field, for an unknown or none.
func ParseScopes(field, s string) ([]KeyScope, error) {
	var out []KeyScope
	var v Validation
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if !slices.Contains(AllScopes(), KeyScope(part)) {
			v.Add(field, fmt.Sprintf("%q is not a scope: use %s", part, scopeNames()))
			continue
		}
		out = append(out, KeyScope(part))
	}
	if len(out) == 0 && len(v.fields) == 0 {
		v.Add(field, "name at least one scope: "+scopeNames())
	}
	if err := v.Err("invalid scopes"); err != nil {
		return nil, err
	}
	return slices.Compact(slices.Sorted(slices.Values(out))), nil
}

func scopeNames() string {
	names := make([]string, 0, 6)
	for _, s := range AllScopes() {
		names = append(names, string(s))
	}
	return strings.Join(names, ", ")
}

// APIKeyPrefix starts every service key, so that a key is told from a
// JWT at a glance (and by a secret scanner).
const APIKeyPrefix = "qk_"

// APIKey is a service key: how a program around quan (an order system, a
// POS, a CRM) calls the API. The key itself is shown once, when it is
// made; the store keeps only its keyed hash.
type APIKey struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
	// ShopNo owns the key: 0 for the platform, else the one shop whose
	// coupons and templates the key reaches.
	ShopNo int64      `json:"shopNo"`
	Scopes []KeyScope `json:"scopes"`
	// Hash is the HMAC-SHA256 of the key under the store's secret
	// (SecretAPIKeys): what a key is looked up by.
	Hash []byte `json:"-"`
	// Hint is the key's first characters, "qk_AbCd", to tell keys apart.
	Hint       string    `json:"hint"`
	CreatedAt  time.Time `json:"createdAt"`
	CreatedBy  string    `json:"createdBy"`
	LastUsedAt time.Time `json:"lastUsedAt,omitzero"`
	RevokedAt  time.Time `json:"revokedAt,omitzero"`
}

// Validate refuses a key with a bad name, owner or scopes, naming the field.
func (k *APIKey) Validate() error {
	var v Validation
	if strings.TrimSpace(k.Name) == "" || len(k.Name) > 100 {
		v.Add("name", "must be 1 to 100 bytes")
	} else {
		v.Line("name", k.Name)
	}
	if k.ShopNo < 0 {
		v.Add("shopNo", "must be a positive shop number, or 0 for the platform")
	}
	if len(k.Scopes) == 0 {
		v.Add("scopes", "name at least one scope: "+scopeNames())
	}
	for _, s := range k.Scopes {
		switch {
		case !slices.Contains(AllScopes(), s):
			v.Add("scopes", fmt.Sprintf("%q is not a scope: use %s", s, scopeNames()))
		case s == ScopeClaims && k.ShopNo != 0:
			v.Add("scopes", "claims is the platform's: a shop's key claims for no user")
		}
	}
	return v.Err("invalid service key")
}

// Revoked reports whether the key was revoked.
func (k *APIKey) Revoked() bool { return !k.RevokedAt.IsZero() }

// Identity is who a request made with the key is.
func (k *APIKey) Identity() Identity {
	return Identity{Subject: k.Name, Role: RoleService, ShopNo: k.ShopNo, KeyID: k.ID, Scopes: NewScopeSet(k.Scopes...)}
}

// SecretAPIKeys names the SecretStore secret service keys are hashed with.
const SecretAPIKeys = "apikeys"

// APIKeyStore keeps service keys.
type APIKeyStore interface {
	// CreateAPIKey stores k, setting its ID. ECONFLICT if its Hash is
	// another key's.
	CreateAPIKey(ctx context.Context, k *APIKey) error
	// APIKeys returns every key, revoked ones too, newest first.
	APIKeys(ctx context.Context) ([]*APIKey, error)
	// APIKeyByHash returns the key whose Hash is hash, revoked or not, or
	// ErrNotFound.
	APIKeyByHash(ctx context.Context, hash []byte) (*APIKey, error)
	// RevokeAPIKey sets the RevokedAt of key id to at, unless it was
	// revoked before (then it keeps its time), and returns it; ErrNotFound
	// for no key id.
	RevokeAPIKey(ctx context.Context, id int64, at time.Time) (*APIKey, error)
	// TouchAPIKey sets the LastUsedAt of key id to at if that is later.
	// A key that does not exist is no error.
	TouchAPIKey(ctx context.Context, id int64, at time.Time) error
}

// ScopeSet is a set of scopes as one comparable value, as an Identity
// carries them.
type ScopeSet uint32

// NewScopeSet returns the set of scopes; unknown ones are left out.
func NewScopeSet(scopes ...KeyScope) ScopeSet {
	var set ScopeSet
	for _, s := range scopes {
		if i := scopeBit(s); i >= 0 {
			set |= 1 << i
		}
	}
	return set
}

// Has reports whether the set holds scope.
func (set ScopeSet) Has(scope KeyScope) bool {
	i := scopeBit(scope)
	return i >= 0 && set&(1<<i) != 0
}

// List returns the scopes of the set in AllScopes' order.
func (set ScopeSet) List() []KeyScope {
	var out []KeyScope
	for i, s := range AllScopes() {
		if set&(1<<i) != 0 {
			out = append(out, s)
		}
	}
	return out
}

// MarshalJSON writes the set as a list of scope names.
func (set ScopeSet) MarshalJSON() ([]byte, error) {
	return json.Marshal(set.List())
}

// scopeBit is the bit of scope in a ScopeSet, its place in AllScopes; -1
// for no scope. A switch, as a request's check must not allocate.
func scopeBit(scope KeyScope) int {
	switch scope {
	case ScopeSettlement:
		return 0
	case ScopeRedeem:
		return 1
	case ScopeCouponsRead:
		return 2
	case ScopeTemplates:
		return 3
	case ScopeTasks:
		return 4
	case ScopeClaims:
		return 5
	}
	return -1
}
