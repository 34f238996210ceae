package sqlite

import (
	"database/sql"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/quantest"
)

// TestBulkApply measures a bulk distribution (quantest.RunBulk) on a fresh
// database and prints the figures. It runs only with QUAN_BENCH=1:
//
//	QUAN_BENCH=1 go test ./sqlite -run TestBulkApply -v
//
// The environment varies the run, for comparing settings:
//
//	QUAN_BENCH_USERS     rows (1000000)
//	QUAN_BENCH_CHUNK     rows per chunk (ChunkSize)
//	QUAN_BENCH_HELD      share of users holding a coupon already (0)
//	QUAN_BENCH_LIMIT     per-user limit (1)
//	QUAN_BENCH_STOCK     the template's stock (enough for every row)
//	QUAN_BENCH_INVALID   share of rows the file check refused (0.001)
//	QUAN_BENCH_PAGE_SIZE page size of the new file (Open's default)
//	QUAN_BENCH_PRAGMAS   writer pragmas after Open's, ";"-separated
//	QUAN_BENCH_SQL       statements to run first, ";"-separated (to try
//	                     another schema: DROP INDEX coupons_available_valid_end)
//	QUAN_BENCH_DIR       where the database goes (a temporary directory)
//	QUAN_BENCH_SINGLES   then apply this many one-row chunks, one after
//	                     another, as single writes such as claims come (0)
func TestBulkApply(t *testing.T) {
	if os.Getenv("QUAN_BENCH") != "1" {
		t.Skip("set QUAN_BENCH=1 to measure a bulk distribution")
	}
	env := func(k string, def float64) float64 {
		v := os.Getenv(k)
		if v == "" {
			return def
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", k, v, err)
		}
		return f
	}
	dir := os.Getenv("QUAN_BENCH_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	path := filepath.Join(dir, "bulk.db")
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(path + suffix)
	}
	if ps := os.Getenv("QUAN_BENCH_PAGE_SIZE"); ps != "" {
		// The page size of a file is set before its first table.
		raw, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{"PRAGMA page_size = " + ps, "PRAGMA journal_mode = WAL", "CREATE TABLE x (a)", "DROP TABLE x"} {
			if _, err := raw.Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		raw.Close()
	}
	db, err := Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var stmts []string
	for _, p := range strings.Split(os.Getenv("QUAN_BENCH_PRAGMAS"), ";") {
		if p = strings.TrimSpace(p); p != "" {
			stmts = append(stmts, "PRAGMA "+p)
		}
	}
	for _, q := range append(stmts, strings.Split(os.Getenv("QUAN_BENCH_SQL"), ";")...) {
		if q = strings.TrimSpace(q); q != "" {
			if _, err := db.write.ExecContext(t.Context(), q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	s := NewStore(db)
	opt := quantest.BulkOptions{
		Users:     int(env("QUAN_BENCH_USERS", 1_000_000)),
		ChunkSize: int(env("QUAN_BENCH_CHUNK", ChunkSize)),
		Limit:     int64(env("QUAN_BENCH_LIMIT", 1)),
		Stock:     int64(env("QUAN_BENCH_STOCK", 0)),
		Held:      env("QUAN_BENCH_HELD", 0),
		Invalid:   env("QUAN_BENCH_INVALID", 0.001),
	}
	res := quantest.RunBulk(t, quantest.TaskStores{Templates: s, Tasks: s, Coupons: s}, opt)

	start := time.Now()
	if err := db.Checkpoint(t.Context()); err != nil {
		t.Fatal(err)
	}
	checkpoint := time.Since(start)
	if n := int(env("QUAN_BENCH_SINGLES", 0)); n > 0 {
		mean, walBytes := singleWrites(t, db, s, path, n)
		t.Logf("%d one-row chunks: %v each, %d KiB of WAL each", n, mean.Round(time.Microsecond), walBytes>>10)
	}
	var pageSize, pages int64
	db.write.QueryRowContext(t.Context(), "PRAGMA page_size").Scan(&pageSize)
	db.write.QueryRowContext(t.Context(), "PRAGMA page_count").Scan(&pages)
	t.Logf("chunk %d, page size %d, pragmas %q, sql %q, held %.2f, limit %d, stock %d",
		opt.ChunkSize, pageSize, os.Getenv("QUAN_BENCH_PRAGMAS"), os.Getenv("QUAN_BENCH_SQL"), opt.Held, opt.Limit, opt.Stock)
	t.Logf("%v; final checkpoint %v, file %d MiB", res, checkpoint.Round(time.Millisecond), pageSize*pages>>20)
}

// singleWrites applies n one-row chunks of new users to a fresh template
// and returns the mean time of one and the WAL it wrote.
func singleWrites(t *testing.T, db *DB, s *Store, path string, n int) (time.Duration, int64) {
	ctx := t.Context()
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	tpl := &quan.Template{
		ShopNo: 1,
		TemplateSpec: quan.TemplateSpec{
			Name: "singles", Kind: quan.KindDirect, Rule: quan.Rule{Amount: 100}, Source: quan.SourceShop,
			Scope: quan.Scope{Kind: quan.ScopeAll}, IssueStart: now, IssueEnd: now.AddDate(0, 1, 0),
			Validity: quan.Validity{Kind: quan.ValidRelative, Hours: 24}, PerUserLimit: 1,
		},
		Stock: int64(n), TotalStock: int64(n), Status: quan.TemplateActive, CreatedBy: "bench", CreatedAt: now, UpdatedAt: now,
	}
	if err := s.CreateTemplate(ctx, tpl, "bench"); err != nil {
		t.Fatal(err)
	}
	task := &quan.Task{ShopNo: 1, TemplateID: tpl.ID, Name: "singles", FileName: "s.csv", FileSize: 1, ChunkSize: 1,
		Status: quan.TaskRunning, Owner: "bench", CreatedBy: "bench", CreatedAt: now, UpdatedAt: now}
	if err := s.CreateTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	if _, err := db.write.ExecContext(ctx, `PRAGMA wal_autocheckpoint = 0`); err != nil {
		t.Fatal(err)
	}
	if err := db.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	rnd := rand.New(rand.NewPCG(7, 7))
	start := time.Now()
	for i := range n {
		u := 1e18 + rnd.Int64N(8e18)
		c := &quan.Chunk{TaskID: task.ID, Owner: "bench", Seq: int64(i + 1), Now: now,
			Rows: []quan.ChunkRow{{Line: int64(i + 2), UserID: u, Raw: strconv.FormatInt(u, 10)}}}
		if _, err := s.ApplyChunk(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	mean := time.Since(start) / time.Duration(n)
	fi, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	return mean, fi.Size() / int64(n)
}
