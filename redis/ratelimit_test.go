package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/quantest"
)

// eachBucket is the Cache's rate limiter as in a cluster, one script call
// a bucket, whatever Redis it runs on.
type eachBucket struct{ *Cache }

func (c eachBucket) Allow(ctx context.Context, buckets ...quan.Bucket) (int, time.Duration, error) {
	if len(buckets) == 0 {
		return -1, 0, nil
	}
	return c.allowEach(ctx, buckets)
}

func TestRateLimiterEachBucket(t *testing.T) {
	quantest.TestRateLimiter(t, func(t *testing.T) quan.RateLimiter { return eachBucket{newTestCache(t)} })
}

// TestExecEachLoads runs a script Redis has never seen: the pipelined
// EVALSHA finds none, and execEach loads it.
func TestExecEachLoads(t *testing.T) {
	c := newTestCache(t)
	var b [8]byte
	rand.Read(b[:])
	script, sha := luaScript("-- " + hex.EncodeToString(b[:]) + "\nreturn redis.call('INCR', KEYS[1])")
	k := c.prefix + "execeach"
	for want := int64(1); want <= 2; want++ {
		res := c.execEach(t.Context(), script, sha, []rueidis.LuaExec{{Keys: []string{k}}, {Keys: []string{k}}})
		for i, r := range res {
			n, err := r.AsInt64()
			if err != nil || n != 2*(want-1)+int64(i)+1 {
				t.Fatalf("round %d, call %d: %d, %v", want, i, n, err)
			}
		}
	}
}

// twoCalls takes from each bucket in a call of its own, one round trip
// after the other: what a claim did before Allow took several buckets.
type twoCalls struct{ *Cache }

func (c twoCalls) Allow(ctx context.Context, buckets ...quan.Bucket) (int, time.Duration, error) {
	for i, b := range buckets {
		refused, wait, err := c.Cache.Allow(ctx, b)
		if err != nil || refused >= 0 {
			return i, wait, err
		}
	}
	return -1, 0, nil
}

// BenchmarkAllow compares the ways of taking from a claim's two buckets
// (the user's, one of 10,000, and the template's): one script call with
// both, one call a bucket pipelined in one round trip (what a cluster
// needs), and a call a bucket one after the other. Many goroutines, as
// the server's connections.
func BenchmarkAllow(b *testing.B) {
	c := newTestCache(b)
	for _, bc := range []struct {
		name string
		l    quan.RateLimiter
	}{{"OneScript", c}, {"Pipelined", eachBucket{c}}, {"TwoCalls", twoCalls{c}}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetParallelism(64)
			var seq atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					n := seq.Add(1)
					refused, _, err := bc.l.Allow(context.Background(),
						quan.Bucket{Key: "claim:user:" + strconv.FormatInt(n%10000, 10), Rate: 1e6, Burst: 1000},
						quan.Bucket{Key: "claim:template:1", Rate: 1e9, Burst: 1e9})
					if err != nil || refused >= 0 {
						b.Errorf("refused %d, %v", refused, err)
						return
					}
				}
			})
		})
	}
}
