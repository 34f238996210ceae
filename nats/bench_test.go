package nats

import (
	"fmt"
	"os"
	"testing"

	"github.com/quanhq/quan"
)

// BenchmarkPublish compares Publish, which waits for each message's ack,
// with PublishMany, which sends a window of messages before waiting, on
// small messages. It reports msgs/s; to measure 100,000 messages:
//
//	QUAN_TEST_NATS=nats://127.0.0.1:4222 go test -run '^$' -bench Publish -benchtime 100000x ./nats/
func BenchmarkPublish(b *testing.B) {
	type opener func(b *testing.B) func(Config) (*Bus, error)
	targets := map[string]opener{}
	srv := startTestServer(b, b.TempDir())
	targets["Embedded"] = func(b *testing.B) func(Config) (*Bus, error) {
		return func(cfg Config) (*Bus, error) { return srv.Bus(b.Context(), cfg) }
	}
	if url := os.Getenv("QUAN_TEST_NATS"); url != "" {
		targets["External"] = func(b *testing.B) func(Config) (*Bus, error) {
			return func(cfg Config) (*Bus, error) { return OpenConfig(b.Context(), url, cfg) }
		}
	} else {
		b.Log("QUAN_TEST_NATS is not set: external NATS not measured")
	}
	for _, target := range []string{"Embedded", "External"} {
		open, ok := targets[target]
		if !ok {
			continue
		}
		b.Run(target+"/Publish", func(b *testing.B) {
			bus := openTestBus(b, open(b))
			ms := benchMessages(b.N)
			b.ResetTimer()
			for _, m := range ms {
				if err := bus.Publish(b.Context(), m); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
		b.Run(target+"/PublishMany", func(b *testing.B) {
			bus := openTestBus(b, open(b))
			ms := benchMessages(b.N)
			b.ResetTimer()
			if err := bus.PublishMany(b.Context(), ms); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

// benchMessages returns n claim-sized messages with distinct IDs.
func benchMessages(n int) []quan.Message {
	ms := make([]quan.Message, n)
	for i := range ms {
		ms[i] = quan.Message{
			Subject: "quan.bench",
			ID:      fmt.Sprintf("claim-%d", i),
			Data:    fmt.Appendf(nil, `{"user":%d,"template":42}`, 1000000+i),
		}
	}
	return ms
}
