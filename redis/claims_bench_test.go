package redis

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/quanhq/quan"
)

// BenchmarkReserveLimited reserves claims as a flash sale makes them: each
// of a new user, with the user's and the template's rate buckets, from
// many goroutines at once. Besides ns/op (the client's wall time per
// claim) it reports redis-µs/claim: the time Redis spent in script calls,
// from INFO commandstats, the figure that bounds a Redis serving claims.
func BenchmarkReserveLimited(b *testing.B) {
	c := newTestCache(b)
	loadTemplate(b, c, 1, 1<<40)
	var seq atomic.Int64
	before := scriptMicros(b, c)
	b.SetParallelism(128)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			u := seq.Add(1)
			refused, _, out, err := c.ReserveLimited(context.Background(), 1, "claim"+strconv.FormatInt(u, 10), []int64{u}, limitedNow,
				[]quan.Bucket{{Key: "claim:user:" + strconv.FormatInt(u, 10), Rate: 1, Burst: 5}, {Key: "claim:template:1", Rate: 1e9, Burst: 1e9}})
			if err != nil || refused != -1 || len(out) != 1 || out[0] != "" {
				b.Errorf("claim %d: refused %d, %v, %v", u, refused, out, err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric((scriptMicros(b, c)-before)/float64(b.N), "redis-µs/claim")
}

// scriptMicros is the time Redis has spent in EVALSHA and EVAL calls, in
// microseconds, by INFO commandstats.
func scriptMicros(b *testing.B, c *Cache) float64 {
	info, err := c.client.Do(context.Background(), c.client.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for line := range strings.Lines(info) {
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (name != "cmdstat_evalsha" && name != "cmdstat_eval") {
			continue
		}
		for f := range strings.SplitSeq(stats, ",") {
			if v, ok := strings.CutPrefix(f, "usec="); ok {
				n, err := strconv.ParseFloat(v, 64)
				if err != nil {
					b.Fatalf("commandstats %q: %v", line, err)
				}
				total += n
			}
		}
	}
	return total
}
