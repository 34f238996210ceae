package sqlite

import (
	"errors"
	"path/filepath"
	"slices"
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

// TestClaimReasonCodesMigration: the free-text reasons claims were failed
// with before reasons were codes (the reaper's, a dead letter's) become
// the codes, on the claims and in the counts, which add up under them.
func TestClaimReasonCodesMigration(t *testing.T) {
	db, err := Open(t.Context(), filepath.Join(t.TempDir(), "quan.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const abandoned = "abandoned: the claim was not handed off before its process stopped"
	for _, q := range []string{
		`INSERT INTO claims (id, template_id, user_id, status, reason, at, decided_at) VALUES
			('c1-1-a', 1, 1, 'failed', '` + abandoned + `', 0, 0),
			('c1-2-a', 1, 2, 'failed', 'hand-off failed: nats: timeout', 0, 0),
			('c1-3-a', 1, 3, 'failed', 'out_of_stock', 0, 0)`,
		`INSERT INTO claim_refusals (template_id, decided_by, code, n) VALUES
			(1, 'store', '` + abandoned + `', 3),
			(1, 'store', 'hand-off failed: nats: timeout', 2),
			(1, 'store', 'hand-off failed: no responders', 1),
			(1, 'store', 'handoff_failed', 4),
			(1, 'store', 'out_of_stock', 5),
			(2, 'store', 'hand-off failed: nats: timeout', 6),
			(1, 'cache', 'sold_out', 7)`,
	} {
		if _, err := db.write.ExecContext(t.Context(), q); err != nil {
			t.Fatal(err)
		}
	}
	ms, err := sqlrow.Migrations(migrationFiles, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(ms, func(m sqlrow.Migration) bool { return m.Name == "0031_claim_reason_codes.sql" })
	if i < 0 {
		t.Fatal("no migration 0031_claim_reason_codes.sql")
	}
	if _, err := db.write.ExecContext(t.Context(), ms[i].SQL); err != nil {
		t.Fatalf("migration again, on the old reasons: %v", err)
	}
	text := func(r sqlrow.Scanner) (s string, err error) { return s, r.Scan(&s) }
	reasons, err := sqlrow.Query(t.Context(), db.read, "claims", text, `SELECT id || ' ' || reason FROM claims ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"c1-1-a abandoned", "c1-2-a handoff_failed", "c1-3-a out_of_stock"}; !slices.Equal(reasons, want) {
		t.Errorf("claims %q, want %q", reasons, want)
	}
	counts, err := sqlrow.Query(t.Context(), db.read, "claim refusals", text, `SELECT template_id || ' ' || decided_by || ' ' || code || ' ' || n
		FROM claim_refusals ORDER BY template_id, decided_by, code`)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"1 cache sold_out 7", "1 store abandoned 3", "1 store handoff_failed 7", "1 store out_of_stock 5", "2 store handoff_failed 6"}
	if !slices.Equal(counts, want) {
		t.Errorf("claim_refusals %q, want %q", counts, want)
	}
}
