package sqlite

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/sqlrow"
)

func TestMigrationsRunOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "quan.db")
	ms, err := sqlrow.Migrations(migrationFiles, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	applied := func(db *DB) map[int]int64 {
		t.Helper()
		rows, err := db.read.QueryContext(t.Context(), `SELECT version, applied_at FROM schema_migrations`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		m := map[int]int64{}
		for rows.Next() {
			var v int
			var at int64
			if err := rows.Scan(&v, &at); err != nil {
				t.Fatal(err)
			}
			m[v] = at
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return m
	}

	db, err := Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	first := applied(db)
	if len(first) != len(ms) {
		t.Errorf("%d migrations recorded, want %d", len(first), len(ms))
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// Reapplying a migration would fail (CREATE TABLE without IF NOT
	// EXISTS) or record a new time.
	db, err = Open(t.Context(), path, nil)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer db.Close()
	second := applied(db)
	if len(second) != len(first) {
		t.Errorf("after reopening %d migrations are recorded, want %d", len(second), len(first))
	}
	for v, at := range first {
		if second[v] != at {
			t.Errorf("migration %d applied at %d, then again at %d", v, at, second[v])
		}
	}
}

func TestOpenSetsPragmas(t *testing.T) {
	db, err := Open(t.Context(), filepath.Join(t.TempDir(), "quan.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, c := range []struct {
		pragma, want string
	}{
		{"journal_mode", "wal"},
		{"foreign_keys", "1"},
		{"synchronous", "1"}, // NORMAL
		{"busy_timeout", "5000"},
		{"wal_autocheckpoint", "32768"},
		{"journal_size_limit", "67108864"},
	} {
		var got string
		if err := db.write.QueryRowContext(t.Context(), "PRAGMA "+c.pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("PRAGMA %s = %s, want %s", c.pragma, got, c.want)
		}
	}
	// The reader pool must refuse writes.
	if _, err := db.read.ExecContext(t.Context(), `DELETE FROM templates`); err == nil {
		t.Error("the reader pool accepted a write")
	}
}

func TestTranslateUniqueViolationIsConflict(t *testing.T) {
	db, err := Open(t.Context(), filepath.Join(t.TempDir(), "quan.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = db.write.ExecContext(t.Context(),
		`INSERT INTO schema_migrations (version, name, applied_at) VALUES (1, 'again', 0)`)
	if err == nil {
		t.Fatal("inserting a duplicate primary key succeeded")
	}
	if err := translate(err); !errors.Is(err, quan.ErrConflict) {
		t.Errorf("translate(%v) is not ErrConflict", err)
	}
}

func TestOpenRefusesMemory(t *testing.T) {
	for _, path := range []string{"", ":memory:", "file::memory:"} {
		if db, err := Open(t.Context(), path, nil); err == nil {
			db.Close()
			t.Errorf("Open(%q) succeeded; want an error: both pools must share one file", path)
		}
	}
}
