package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/integration"
	"github.com/quanhq/quan/mysql/mysqltest"
	"github.com/quanhq/quan/redis"
)

// benchProdEnv returns the addresses of the production backends the
// tests run quan on, or skips without QUAN_TEST_MYSQL, QUAN_TEST_REDIS and
// QUAN_TEST_NATS (e.g. nats://127.0.0.1:4222, a server running JetStream).
func benchProdEnv(t *testing.T) (redisURL, natsURL string) {
	t.Helper()
	urls := integration.Need(t, integration.MySQL, integration.Redis, integration.NATS)
	mysqltest.Server(t)
	return urls[1], urls[2]
}

// TestBenchDistributeProduction measures a small distribution on MySQL,
// Redis and NATS with a worker process next to the bench's own consumer,
// and the raw-ingest floor, on a database, key prefix and stream of the
// test's own, then checks the figures are printed.
func TestBenchDistributeProduction(t *testing.T) {
	redisURL, natsURL := benchProdEnv(t)
	bin := buildQuan(t)
	prefix := fmt.Sprintf("benchtest%d:", rand.Uint32())
	suffix := fmt.Sprint(rand.Uint32())
	cache := redisURL + "?prefix=" + prefix
	bus := natsURL + "?stream=BENCHTEST" + suffix + "&namespace=benchtest" + suffix
	t.Cleanup(func() {
		benchDropRedis(t, redisURL, prefix)
		benchDropStreams(t, natsURL, "BENCHTEST"+suffix)
	})

	out, stderr, err := runBench(t, "bench", "distribute", "-n", "20000", "--chunk-size", "2000",
		"--store", mysqltest.URL(t), "--cache", cache, "--bus", bus,
		"--data", t.TempDir(), "--workers", "1", "--floor", "--quan-bin", bin)
	if err != nil {
		t.Fatalf("%v\n%s%s", err, out, stderr)
	}
	for _, re := range []string{
		`bench distribute: store mysql, cache redis, bus nats, 1 worker processes besides this one, \d+ cores`,
		`bench distribute: 20,000 users, 20,000 issued, wall \S+, [\d,]+ rows/s, peak RSS \d+ MB, chunk 2000, \d+ cores`,
		`bench distribute: raw-ingest floor 20,000 rows in \S+, [\d,]+ rows/s \(INSERTs of 5,000 rows on 2 connections into a table like coupons, before the distribution\), \d+ cores; distribution/floor [\d.]+×`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("no line matching %s in:\n%s", re, out)
		}
	}
	if !strings.Contains(stderr, "worker 1: ") || !strings.Contains(stderr, "quan worker running") {
		t.Errorf("the worker's log is not on stderr:\n%s", stderr)
	}
}

// TestBenchDistributeFreshDB runs the bench with --fresh-db and checks
// that the database, the Redis keys and the NATS streams it made up are
// gone afterwards.
func TestBenchDistributeFreshDB(t *testing.T) {
	redisURL, natsURL := benchProdEnv(t)
	prefix := fmt.Sprintf("benchtest%d:", rand.Uint32())
	stream := fmt.Sprintf("BENCHTEST%d", rand.Uint32())
	t.Cleanup(func() { benchDropRedis(t, redisURL, prefix) }) // in case the bench left keys

	out, stderr, err := runBench(t, "bench", "distribute", "-n", "3000", "--fresh-db",
		"--store", mysqltest.URL(t), "--cache", redisURL+"?prefix="+prefix, "--bus", natsURL+"?stream="+stream,
		"--data", t.TempDir())
	if err != nil {
		t.Fatalf("%v\n%s%s", err, out, stderr)
	}
	m := regexp.MustCompile(`store mysql \(database (quan_bench_[0-9a-f]+)\), cache redis, bus nats, 0 worker processes`).FindStringSubmatch(out)
	if m == nil || !strings.Contains(out, "3,000 issued") {
		t.Fatalf("output:\n%s", out)
	}
	srv, _ := mysqltest.Server(t)
	var n int
	if err := srv.QueryRow(`SELECT count(*) FROM information_schema.schemata WHERE schema_name = ?`, m[1]).Scan(&n); err != nil || n != 0 {
		t.Errorf("database %s: %d left (%v)", m[1], n, err)
	}
	// The bench's template is the first of its fresh database.
	c, err := redis.Open(t.Context(), redisURL, prefix+strings.TrimPrefix(m[1], "quan_")+":")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.State(t.Context(), 1); !errors.Is(err, quan.ErrCacheCold) {
		t.Errorf("the cache's keys were left: State = %v, want ErrCacheCold", err)
	}
	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	for name := range js.StreamNames(t.Context()).Name() {
		if strings.HasPrefix(name, stream) {
			t.Errorf("stream %s was left", name)
		}
	}
}

// TestBenchDistributeFlags checks the flags that need production
// backends are refused without them.
func TestBenchDistributeFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--workers", "1"}, "use --bus nats://"},
		{[]string{"--workers", "-1"}, "want 0 or more"},
		{[]string{"--fresh-db"}, "use --store mysql://"},
	} {
		args := append([]string{"bench", "distribute", "-n", "10", "--data", t.TempDir()}, tc.args...)
		if _, _, err := runBench(t, args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error saying %q", tc.args, err, tc.want)
		}
	}
}

// benchDropRedis deletes the keys under prefix.
func benchDropRedis(t *testing.T, redisURL, prefix string) {
	t.Helper()
	c, err := redis.Open(context.Background(), redisURL, prefix)
	if err != nil {
		t.Error(err)
		return
	}
	defer c.Close()
	if err := c.Drop(context.Background()); err != nil {
		t.Error(err)
	}
}

// benchDropStreams deletes the stream and its dead letters.
func benchDropStreams(t *testing.T, natsURL, stream string) {
	t.Helper()
	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Error(err)
		return
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Error(err)
		return
	}
	for _, s := range []string{stream, stream + "_DEAD"} {
		if err := js.DeleteStream(context.Background(), s); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			t.Errorf("delete stream %s: %v", s, err)
		}
	}
}
