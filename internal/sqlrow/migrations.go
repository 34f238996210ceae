package sqlrow

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Migration is one numbered schema change, a file NNNN_what.sql.
type Migration struct {
	Version int    // NNNN, at least 1
	Name    string // the file's name
	SQL     string // the file's text
}

// Migrations returns the files dir/*.sql of fsys as migrations in version
// order. Each name must start with a positive number and '_', and no two
// may have the same number. A migration once released is never edited: a
// change is a new file.
func Migrations(fsys fs.FS, dir string) ([]Migration, error) {
	names, err := fs.Glob(fsys, path.Join(dir, "*.sql"))
	if err != nil {
		return nil, err
	}
	var ms []Migration
	for _, p := range names {
		name := path.Base(p)
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v < 1 {
			return nil, fmt.Errorf("migration %s: the name must start with a positive number and '_'", name)
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: name, SQL: string(b)})
	}
	slices.SortFunc(ms, func(a, b Migration) int { return a.Version - b.Version })
	for i := 1; i < len(ms); i++ {
		if ms[i].Version == ms[i-1].Version {
			return nil, fmt.Errorf("migrations %s and %s have the same number", ms[i-1].Name, ms[i].Name)
		}
	}
	return ms, nil
}

// ErrMigrationsPending is the error of opening a database with migrations
// not applied when the caller asked not to apply them.
var ErrMigrationsPending = errors.New("migrations pending")

// MigrationStatus is a migration and whether it was applied.
type MigrationStatus struct {
	Version   int
	Name      string
	AppliedAt time.Time // zero: pending
}

// Pending reports whether the migration is still to be applied.
func (s MigrationStatus) Pending() bool { return s.AppliedAt.IsZero() }

// Statuses returns every migration of ms in version order, with the time
// applied says it was applied (absent: pending).
func Statuses(ms []Migration, applied map[int]time.Time) []MigrationStatus {
	out := make([]MigrationStatus, len(ms))
	for i, m := range ms {
		out[i] = MigrationStatus{Version: m.Version, Name: m.Name, AppliedAt: applied[m.Version]}
	}
	return out
}

// CheckApplied returns an error wrapping ErrMigrationsPending that names
// the migrations of ms not in applied, nil if there are none.
func CheckApplied(ms []Migration, applied map[int]time.Time) error {
	var names []string
	for _, m := range ms {
		if _, ok := applied[m.Version]; !ok {
			names = append(names, m.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %d (%s)", ErrMigrationsPending, len(names), strings.Join(names, ", "))
}
