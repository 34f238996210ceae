package mysql_test

import (
	"os"
	"strconv"
	"testing"

	"github.com/quanhq/quan/mysql"
	"github.com/quanhq/quan/quantest"
)

// TestBulkApply measures a bulk distribution (quantest.RunBulk) on a fresh
// database and prints the figures. It runs only with QUAN_BENCH=1 and a
// server in QUAN_TEST_MYSQL:
//
//	QUAN_BENCH=1 QUAN_TEST_MYSQL='root@tcp(127.0.0.1:3306)/test' \
//		go test ./mysql -run TestBulkApply -v -timeout 30m
//
// The environment varies the run, for comparing settings:
//
//	QUAN_BENCH_USERS   rows (1000000)
//	QUAN_BENCH_CHUNK   rows per chunk (mysql.ChunkSize)
//	QUAN_BENCH_HELD    share of users holding a coupon already (0); 1 is a
//	                   re-run of a distribution everyone got
//	QUAN_BENCH_LIMIT   per-user limit (1)
//	QUAN_BENCH_STOCK   the template's stock (enough for every row)
//	QUAN_BENCH_INVALID share of rows the file check refused (0.001)
func TestBulkApply(t *testing.T) {
	if os.Getenv("QUAN_BENCH") != "1" {
		t.Skip("set QUAN_BENCH=1 (and QUAN_TEST_MYSQL) to measure a bulk distribution")
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
	s := mysql.NewStore(openDB(t))
	opt := quantest.BulkOptions{
		Users:     int(env("QUAN_BENCH_USERS", 1_000_000)),
		ChunkSize: int(env("QUAN_BENCH_CHUNK", mysql.ChunkSize)),
		Limit:     int64(env("QUAN_BENCH_LIMIT", 1)),
		Stock:     int64(env("QUAN_BENCH_STOCK", 0)),
		Held:      env("QUAN_BENCH_HELD", 0),
		Invalid:   env("QUAN_BENCH_INVALID", 0.001),
	}
	res := quantest.RunBulk(t, quantest.TaskStores{Templates: s, Tasks: s, Coupons: s}, opt)
	t.Logf("chunk %d, held %.2f, limit %d, stock %d", opt.ChunkSize, opt.Held, opt.Limit, opt.Stock)
	t.Logf("%v", res)
}
