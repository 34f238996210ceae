package quantest

import (
	"strconv"
	"testing"

	"github.com/quanhq/quan"
)

// BenchmarkIssueClaims measures what the claim consumer asks of a store
// under a flash sale: IssueClaims of full batches of claims by users new
// to one template, in no order (as they arrive), in batches of
// MaxClaimsPerMessage and of MaxClaimsPerTransaction. It reports the time
// a claim.
func BenchmarkIssueClaims(b *testing.B, newStores func(b *testing.B) ClaimStores) {
	for _, size := range []int{quan.MaxClaimsPerMessage, quan.MaxClaimsPerTransaction} {
		b.Run("Batch"+strconv.Itoa(size), func(b *testing.B) {
			s := newStores(b)
			tpl := activeTemplate(b, s.TaskStores, "bench", 20_000_000, 1)
			k := uint32(0)
			batch := make([]*quan.Claim, size)
			for b.Loop() {
				b.StopTimer()
				for i := range batch {
					// Distinct users in no order: an odd multiplier
					// permutes the 31-bit numbers.
					k++
					batch[i] = newClaim(tpl.ID, int64(k*2654435761&0x7fffffff)+1)
				}
				b.StartTimer()
				got, err := s.Claims.IssueClaims(b.Context(), batch, claimAt)
				if err != nil {
					b.Fatal(err)
				}
				for _, c := range got {
					if c.Status != quan.ClaimIssued {
						b.Fatalf("claim %s: %s %s", c.ID, c.Status, c.Reason)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(k), "ns/claim")
		})
	}
}
