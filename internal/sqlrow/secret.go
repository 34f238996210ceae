package sqlrow

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"

	"github.com/quanhq/quan"
)

// Secret returns the secret named name in the secrets table of db, which
// it makes first (quan.SecretSize random bytes) if the table has none:
// insert is the engine's statement that inserts (name, value) unless the
// name is there. Read back after that, the secret is the one the first
// process to insert wrote, however many ask at once.
func Secret(ctx context.Context, db *sql.DB, insert, name string) ([]byte, error) {
	if name == "" || len(name) > 64 || name == CodeKeyName {
		return nil, fmt.Errorf("secret %q: %w", name, quan.Errorf(quan.EINVALID, "a secret's name is 1 to 64 bytes, not the code key's"))
	}
	const read = `SELECT value FROM secrets WHERE name = ?`
	var secret []byte
	err := db.QueryRowContext(ctx, read, name).Scan(&secret)
	if errors.Is(err, sql.ErrNoRows) {
		fresh := make([]byte, quan.SecretSize)
		rand.Read(fresh) // never fails (crypto/rand's contract since Go 1.24)
		if _, err := db.ExecContext(ctx, insert, name, fresh); err != nil {
			return nil, fmt.Errorf("make secret %s: %w", name, err)
		}
		err = db.QueryRowContext(ctx, read, name).Scan(&secret)
	}
	if err != nil {
		return nil, fmt.Errorf("read secret %s: %w", name, err)
	}
	return secret, nil
}
