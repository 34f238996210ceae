//go:build unix

package sqlite

import (
	"context"
	"fmt"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/quanhq/quan/internal/sqlrow"
)

// TestBulkInsertForms measures the ways of writing a million coupons that
// ApplyChunk chose between, on the coupons table alone: how the rows reach
// SQLite, not the rules. It runs only with QUAN_BENCH=1:
//
//	QUAN_BENCH=1 go test ./sqlite -run TestBulkInsertForms -v
//
// QUAN_BENCH_USERS and QUAN_BENCH_CHUNK set the rows (1000000) and the
// rows per transaction (ChunkSize); QUAN_BENCH_FORMS picks forms by name,
// comma-separated.
func TestBulkInsertForms(t *testing.T) {
	if os.Getenv("QUAN_BENCH") != "1" {
		t.Skip("set QUAN_BENCH=1 to measure the insert forms")
	}
	n, chunk := 1_000_000, ChunkSize
	if v, err := strconv.Atoi(os.Getenv("QUAN_BENCH_USERS")); err == nil {
		n = v
	}
	if v, err := strconv.Atoi(os.Getenv("QUAN_BENCH_CHUNK")); err == nil {
		chunk = v
	}
	forms := []insertForm{
		// Like the prototype: numbered parameters ?NNN, plain INSERT, users
		// in file order.
		{name: "numbered", verb: "INSERT", numbered: true},
		{name: "anonymous", verb: "INSERT"},
		{name: "or-ignore", verb: "INSERT OR IGNORE"},
		{name: "or-ignore+lookup", verb: "INSERT OR IGNORE", lookup: true},
		{name: "or-ignore+sorted", verb: "INSERT OR IGNORE", sorted: true}, // ApplyChunk
		{name: "sorted+lookup", verb: "INSERT OR IGNORE", sorted: true, lookup: true},
	}
	if pick := os.Getenv("QUAN_BENCH_FORMS"); pick != "" {
		forms = slices.DeleteFunc(forms, func(f insertForm) bool { return !slices.Contains(strings.Split(pick, ","), f.name) })
	}
	for _, f := range forms {
		wall, cpu := f.run(t, n, chunk)
		t.Logf("%-17s %d rows, %d a transaction: %v (%.0f rows/s), CPU %v", f.name, n, chunk,
			wall.Round(time.Millisecond), float64(n)/wall.Seconds(), cpu.Round(time.Millisecond))
	}
}

type insertForm struct {
	name     string
	verb     string // INSERT or INSERT OR IGNORE
	numbered bool   // ?NNN for every parameter, rather than anonymous ones after ?1 … ?10
	sorted   bool   // users in order within a transaction, rather than file order
	lookup   bool   // count each user's coupons first, IN lists of batchRows
}

func (f insertForm) run(t *testing.T, n, chunk int) (wall, cpu time.Duration) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "forms.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	row := func(i int) string {
		if f.numbered {
			return fmt.Sprintf("(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?%d, ?%d)", 11+2*i, 12+2*i)
		}
		return "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?, ?)"
	}
	insertSQL := func(k int) string {
		var b strings.Builder
		b.WriteString(f.verb + ` INTO coupons (template_id, shop_no, status, valid_start, valid_end,
			source, task_id, order_id, created_at, updated_at, user_id, seq) VALUES `)
		for i := range k {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(row(i))
		}
		return b.String()
	}
	users := make([]int64, chunk)
	cpu0 := processCPU()
	start := time.Now()
	for off := 0; off < n; off += chunk {
		users = users[:min(chunk, n-off)]
		for i := range users {
			hi, lo := bits.Mul64(uint64(off+i), 7_046_029_254_386_353_131)
			users[i] = int64(1e18 + bits.Rem64(hi, lo, 8e18))
		}
		if f.sorted {
			slices.Sort(users)
		}
		tx, err := db.write.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if f.lookup {
			for i := 0; i < len(users); i += batchRows {
				part := users[i:min(i+batchRows, len(users))]
				args := []any{int64(1)}
				for _, u := range part {
					args = append(args, u)
				}
				rows, err := tx.QueryContext(ctx, `SELECT user_id, count(*) FROM coupons
					WHERE template_id = ?1 AND user_id IN (`+sqlrow.Params(len(part))+`) GROUP BY user_id`, args...)
				if err != nil {
					t.Fatal(err)
				}
				for rows.Next() {
				}
				rows.Close()
			}
		}
		full, err := tx.PrepareContext(ctx, insertSQL(batchRows))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(users); i += batchRows {
			part := users[i:min(i+batchRows, len(users))]
			args := []any{int64(1), int64(7), "available", int64(1), int64(2), "distribution", int64(3), nil, int64(4), int64(4)}
			for _, u := range part {
				args = append(args, u, int64(1))
			}
			if len(part) == batchRows {
				_, err = full.ExecContext(ctx, args...)
			} else {
				_, err = tx.ExecContext(ctx, insertSQL(len(part)), args...)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	return time.Since(start), processCPU() - cpu0
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
