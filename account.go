package quan

import (
	"context"
	"time"
)

// Account is a person who signs in to the operator console with a
// password: a merchant's operator (RoleMerchant, one shop) or a platform
// admin (RoleAdmin, every shop). It acts with the same Identity, and so the
// same rights, as a bearer token of its role and shop.
type Account struct {
	ID     int64  `json:"id"`
	Name   string `json:"name"` // the login name, unique in any ASCII case: see ValidName
	Role   Role   `json:"role"` // RoleMerchant or RoleAdmin
	ShopNo int64  `json:"shopNo,omitempty"`
	// Disabled accounts cannot sign in, and their sessions end.
	Disabled bool `json:"disabled"`
	// PasswordHash is the password's hash (bcrypt); never shown.
	PasswordHash []byte    `json:"-"`
	CreatedBy    string    `json:"createdBy"`
	CreatedAt    time.Time `json:"createdAt"`
	UpdatedAt    time.Time `json:"updatedAt"`
}

// Identity is who the account acts as: its role and shop, with its name
// as the subject.
func (a *Account) Identity() Identity {
	return Identity{Subject: a.Name, Role: a.Role, ShopNo: a.ShopNo}
}

// Session is one signed-in browser of an account. The browser holds a
// random token; the store keeps only its SHA-256 (ID), so that a stolen
// copy of the store signs nobody in. Deleting the session signs the
// browser out: the server can revoke it.
type Session struct {
	ID        []byte    // SHA-256 of the token
	AccountID int64     //
	CSRF      string    // the token every state-changing request must carry
	Addr      string    // the client address it signed in from
	CreatedAt time.Time //
	SeenAt    time.Time // last request, to the minute
	ExpiresAt time.Time // ends then unless used before: each use moves it on
}

// AccountFilter selects accounts to list.
type AccountFilter struct {
	ShopNo       int64 // AnyShop: every shop
	NameContains string
	Offset       int
	Limit        int // 1 … MaxPageSize; 0 means DefaultPageSize
}

// AccountStore keeps console accounts, their sessions and the failed
// sign-ins that throttle guessing.
type AccountStore interface {
	// CreateAccount stores a, setting its ID; ErrConflict (ECONFLICT) if
	// the name is taken, in any ASCII case.
	CreateAccount(ctx context.Context, a *Account) error
	// Account returns account id, or ErrNotFound.
	Account(ctx context.Context, id int64) (*Account, error)
	// AccountByName returns the account named name in any ASCII case, or
	// ErrNotFound.
	AccountByName(ctx context.Context, name string) (*Account, error)
	// Accounts returns one page of f's accounts by name, and how many
	// match; NameContains ignores ASCII case. A Limit above MaxPageSize
	// is cut to it.
	Accounts(ctx context.Context, f AccountFilter) ([]*Account, int, error)
	// UpdateAccount applies fn to account id and stores the result, in
	// one transaction, and returns it; ErrNotFound if there is no such
	// account. fn's error aborts it and is returned as it is. fn must not
	// change the ID, must be quick and must not call the store; it may
	// run more than once (a deadlock retried).
	UpdateAccount(ctx context.Context, id int64, fn func(*Account) error) (*Account, error)

	// CreateSession stores s.
	CreateSession(ctx context.Context, s *Session) error
	// Session returns the session of id, or ErrNotFound.
	Session(ctx context.Context, id []byte) (*Session, error)
	// TouchSession sets the SeenAt and ExpiresAt of session id; touching
	// no session is no error.
	TouchSession(ctx context.Context, id []byte, seen, expires time.Time) error
	// DeleteSession deletes session id; deleting none is no error.
	DeleteSession(ctx context.Context, id []byte) error
	// DeleteSessions deletes every session of account and says how many.
	DeleteSessions(ctx context.Context, account int64) (int64, error)
	// DeleteExpiredSessions deletes the sessions that expired before t
	// and says how many.
	DeleteExpiredSessions(ctx context.Context, t time.Time) (int64, error)

	// LoginFailed counts one failed sign-in under key (an account's, an
	// address's, or an account's from an address; at most 255 bytes) and
	// returns the failures under key since the first one
	// less than window before now (failures older than that are
	// forgotten), atomically, so that concurrent guesses all count.
	LoginFailed(ctx context.Context, key string, now time.Time, window time.Duration) (failures int, first time.Time, err error)
	// LoginFailures returns the failures under key within window of now.
	LoginFailures(ctx context.Context, key string, now time.Time, window time.Duration) (failures int, first time.Time, err error)
	// ClearLoginFailures forgets the failures under key.
	ClearLoginFailures(ctx context.Context, key string) error
	// ForgiveLoginFailures takes n failures off the count under key, not
	// below zero, and keeps the time of the first: a sign-in proved them
	// the mistakes of the account's owner, not guesses. A key with no
	// failures is left as it is (none).
	ForgiveLoginFailures(ctx context.Context, key string, n int) error
	// DeleteLoginFailures forgets every key whose first failure is at or
	// before t (its window has passed) and says how many: the failures
	// of guessed names and passing addresses would pile up otherwise.
	DeleteLoginFailures(ctx context.Context, t time.Time) (int64, error)
}
