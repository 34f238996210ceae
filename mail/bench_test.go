package mail_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/mail"
)

// BenchmarkSend sends b.N mails, in batches of 1,000 as a dispatcher
// would, to a go-smtp server in the same process (which shares the CPUs),
// and reports mails/s. Every mail must arrive.
//
//	go test -run '^$' -bench BenchmarkSend -benchtime 20000x ./mail/
func BenchmarkSend(b *testing.B) {
	for _, conns := range []int{1, 4, 8} {
		b.Run(fmt.Sprintf("conns=%d", conns), func(b *testing.B) {
			srv := startServer(b, "", "", nil)
			srv.discard = true
			s := newSender(b, "smtp://"+srv.addr+"?from=noreply@quan.test&tls=none", func(c *mail.Config) { c.Conns = conns })
			msgs := make([]quan.Outgoing, 0, 1000)
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; {
				msgs = msgs[:0]
				for ; len(msgs) < cap(msgs) && i < b.N; i++ {
					msgs = append(msgs, outgoing(fmt.Sprintf("bench-%d", i), fmt.Sprintf("u%d@example.com", i)))
				}
				for j, r := range s.Send(context.Background(), msgs) {
					if r.Outcome != quan.Sent {
						b.Fatalf("%s: %+v", msgs[j].ID, r)
					}
				}
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "mails/s")
			if n := srv.count.Load(); n != int64(b.N) {
				b.Fatalf("server received %d mails, want %d", n, b.N)
			}
		})
	}
}
