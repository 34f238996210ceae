package sqlrow

import (
	"strings"

	"github.com/quanhq/quan"
)

// AccountKey is the name_key column of an account named name: its name
// lowered, which the unique index and AccountByName go by, so that names
// differing only in ASCII case are one.
func AccountKey(name string) string { return strings.ToLower(name) }

// ScanAccount reads an account from a row of the columns id, name, role,
// shop_no, disabled, password_hash, created_by, created_at, updated_at,
// in that order.
func ScanAccount(row Scanner) (*quan.Account, error) {
	var a quan.Account
	if err := row.Scan(&a.ID, &a.Name, &a.Role, &a.ShopNo, &a.Disabled, &a.PasswordHash,
		&a.CreatedBy, Time(&a.CreatedAt), Time(&a.UpdatedAt)); err != nil {
		return nil, err
	}
	return &a, nil
}

// ScanSession reads a console session from a row of the columns id,
// account_id, csrf, addr, created_at, seen_at, expires_at, in that order.
func ScanSession(row Scanner) (*quan.Session, error) {
	var s quan.Session
	if err := row.Scan(&s.ID, &s.AccountID, &s.CSRF, &s.Addr,
		Time(&s.CreatedAt), Time(&s.SeenAt), Time(&s.ExpiresAt)); err != nil {
		return nil, err
	}
	return &s, nil
}
