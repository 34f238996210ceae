package sqlrow_test

import (
	"database/sql"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/quanhq/quan/internal/sqlrow"
	_ "modernc.org/sqlite"
)

func TestTimeReadsBothEngines(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 678901000, time.UTC)
	for _, tc := range []struct {
		name     string
		v        any
		nullable bool
		want     time.Time
		wantErr  bool
	}{
		{"SQLiteMicros", at.UnixMicro(), false, at, false},
		{"MySQLTime", at.In(time.FixedZone("X", 3600)), false, at, false},
		{"NullInNullable", nil, true, time.Time{}, false},
		{"ErrNullInNotNull", nil, false, time.Time{}, true},
		{"ErrText", "2030-01-02", true, time.Time{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := time.Unix(1, 0)
			dest := sqlrow.Time(&got)
			if tc.nullable {
				dest = sqlrow.NullTime(&got)
			}
			err := dest.Scan(tc.v)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Scan(%v): %v, want an error: %v", tc.v, err, tc.wantErr)
			}
			if err == nil && (!got.Equal(tc.want) || got.Location() != time.UTC) {
				t.Errorf("Scan(%v) read %v, want %v in UTC", tc.v, got, tc.want)
			}
		})
	}
}

func TestNullWritesZeroAsNULL(t *testing.T) {
	micros := func(t time.Time) int64 { return t.UnixMicro() }
	if v := sqlrow.Null(micros, time.Time{}); v != nil {
		t.Errorf("Null of the zero time = %v, want nil", v)
	}
	at := time.UnixMicro(42)
	if v := sqlrow.Null(micros, at); v != int64(42) {
		t.Errorf("Null of %v = %v, want 42", at, v)
	}
}

func TestMigrations(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		ms, err := sqlrow.Migrations(fstest.MapFS{
			"m/0010_b.sql": {Data: []byte("B")},
			"m/0002_a.sql": {Data: []byte("A")},
			"m/notes.txt":  {Data: []byte("not a migration")},
		}, "m")
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) != 2 || ms[0] != (sqlrow.Migration{Version: 2, Name: "0002_a.sql", SQL: "A"}) || ms[1].Version != 10 {
			t.Errorf("Migrations = %+v, want 0002_a.sql then 0010_b.sql", ms)
		}
	})
	for name, fsys := range map[string]fstest.MapFS{
		"ErrNoNumber":   {"m/first.sql": {}},
		"ErrZero":       {"m/0000_zero.sql": {}},
		"ErrSameNumber": {"m/0001_a.sql": {}, "m/01_b.sql": {}},
	} {
		t.Run(name, func(t *testing.T) {
			if ms, err := sqlrow.Migrations(fsys, "m"); err == nil {
				t.Errorf("Migrations = %+v, want an error", ms)
			}
		})
	}
}

func TestParamsAndWhere(t *testing.T) {
	if got := sqlrow.Params(3); got != "?, ?, ?" {
		t.Errorf("Params(3) = %q", got)
	}
	if got := sqlrow.Params(0); got != "" {
		t.Errorf("Params(0) = %q", got)
	}
	var w sqlrow.Where
	if w.String() != "" || len(w.Args()) != 0 {
		t.Errorf("zero Where = %q %v, want none", w.String(), w.Args())
	}
	w.If(true, "a = ?", 1)
	w.If(false, "b = ?", 2)
	w.If(true, "c BETWEEN ? AND ?", 3, 4)
	if w.String() != " WHERE a = ? AND c BETWEEN ? AND ?" || !slices.Equal(w.Args(), []any{1, 3, 4}) {
		t.Errorf("Where = %q %v", w.String(), w.Args())
	}
}

// TestKeysetReadsEveryPage: the pages follow on from the last key, a short
// page ends the sequence, and the caller may stop early.
func TestKeysetReadsEveryPage(t *testing.T) {
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "k.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(t.Context(), `CREATE TABLE k (g INTEGER, v TEXT);
		INSERT INTO k VALUES (1, 'a'), (1, 'b'), (1, 'c'), (1, 'd'), (1, 'e'), (2, 'x')`); err != nil {
		t.Fatal(err)
	}
	read := func(stop int) ([]string, error) {
		var got []string
		for v, err := range sqlrow.Keyset(t.Context(), db, "k", scanText, func(v string) string { return v }, "", 2,
			`SELECT v FROM k WHERE g = ? AND v > ? ORDER BY v LIMIT 2`, 1) {
			if err != nil {
				return got, err
			}
			if got = append(got, v); len(got) == stop {
				break
			}
		}
		return got, nil
	}
	if got, err := read(-1); err != nil || strings.Join(got, "") != "abcde" {
		t.Errorf("Keyset read %q, %v; want abcde", got, err)
	}
	if got, err := read(3); err != nil || strings.Join(got, "") != "abc" {
		t.Errorf("Keyset stopped after 3 read %q, %v; want abc", got, err)
	}
	if _, err := db.ExecContext(t.Context(), `DROP TABLE k`); err != nil {
		t.Fatal(err)
	}
	if got, err := read(-1); err == nil || !strings.HasPrefix(err.Error(), "k: ") {
		t.Errorf("Keyset on a dropped table read %q, %v; want an error wrapped with k", got, err)
	}
}

func scanText(row sqlrow.Scanner) (string, error) {
	var s string
	err := row.Scan(&s)
	return s, err
}
