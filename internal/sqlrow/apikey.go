package sqlrow

import (
	"strings"

	"github.com/quanhq/quan"
)

// APIKeyColumns are the columns ScanAPIKey reads, in its order, of the
// api_keys table both stores keep.
const APIKeyColumns = `id, name, shop_no, scopes, hash, hint, created_at, created_by, last_used_at, revoked_at`

// ScanAPIKey reads a row of APIKeyColumns. Scopes are kept as one
// comma-separated text.
func ScanAPIKey(row Scanner) (*quan.APIKey, error) {
	var (
		k      quan.APIKey
		scopes string
	)
	if err := row.Scan(&k.ID, &k.Name, &k.ShopNo, &scopes, &k.Hash, &k.Hint, Time(&k.CreatedAt), &k.CreatedBy,
		NullTime(&k.LastUsedAt), NullTime(&k.RevokedAt)); err != nil {
		return nil, err
	}
	for _, s := range strings.Split(scopes, ",") {
		if s != "" {
			k.Scopes = append(k.Scopes, quan.KeyScope(s))
		}
	}
	return &k, nil
}

// JoinScopes is how ScanAPIKey's scopes column is written.
func JoinScopes(scopes []quan.KeyScope) string {
	parts := make([]string, len(scopes))
	for i, s := range scopes {
		parts[i] = string(s)
	}
	return strings.Join(parts, ",")
}
