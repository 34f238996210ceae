package sms_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/sms"
)

// BenchmarkSend sends b.N SMS, in batches of 5,000 as a dispatcher would,
// to a gateway in the same process (which checks every signature and
// shares the CPUs), and reports SMS/s. Every message must arrive.
//
//	go test -run '^$' -bench BenchmarkSend -benchtime 200000x ./sms/
func BenchmarkSend(b *testing.B) {
	for _, batch := range []int{1, 100, 500} {
		b.Run(fmt.Sprintf("maxBatch=%d", batch), func(b *testing.B) {
			g := startGateway(b)
			g.discard = true
			s := newSender(b, g.srv.URL, func(c *sms.Config) { c.MaxBatch = batch; c.Timeout = 30 * time.Second })
			msgs := make([]quan.Outgoing, 0, 5000)
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; {
				msgs = msgs[:0]
				for ; len(msgs) < cap(msgs) && i < b.N; i++ {
					msgs = append(msgs, outgoing(fmt.Sprintf("bench-%d", i), fmt.Sprintf("+86138%08d", i%100_000_000)))
				}
				for j, r := range s.Send(context.Background(), msgs) {
					if r.Outcome != quan.Sent {
						b.Fatalf("%s: %+v", msgs[j].ID, r)
					}
				}
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "sms/s")
			if n := g.count.Load(); n != int64(b.N) {
				b.Fatalf("gateway received %d, want %d", n, b.N)
			}
		})
	}
}
