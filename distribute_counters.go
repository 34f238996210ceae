package quan

import "sync/atomic"

// DistributionCounters count what a Distributor did in this process;
// package prom reads them at each scrape.
type DistributionCounters struct {
	// Rows decided by the chunks this process applied, by outcome:
	// issued, then each Cause (RowOutcomes). A dry run's rows that would
	// be issued are not counted.
	rows [1 + len(causeList)]atomic.Int64

	ChunksApplied     atomic.Int64 // applied by the store in this delivery, on the first
	ChunksRedelivered atomic.Int64 // a delivery again (attempt > 1), or a chunk applied before
	ChunksFailed      atomic.Int64 // applying failed: the bus delivers it again
	// LeasesLost counts the tasks whose runner here lost its lease to
	// another runner (it stalled past the lease); a task canceled is not
	// counted.
	LeasesLost atomic.Int64
}

// causeList are the causes, in the order DistributionCounters keeps them.
var causeList = [...]Cause{CauseInvalidID, CauseInexactNumber, CauseDuplicate,
	CauseLimitReached, CauseOutOfStock, CauseTemplateInactive, CauseNotEligible}

// RowIssued is the outcome of a row that got its coupon.
const RowIssued = "issued"

// RowOutcomes returns the outcomes of a row: RowIssued and every Cause.
func RowOutcomes() []string {
	out := []string{RowIssued}
	for _, c := range causeList {
		out = append(out, string(c))
	}
	return out
}

// Rows returns how many rows had outcome (one of RowOutcomes).
func (c *DistributionCounters) Rows(outcome string) int64 {
	if outcome == RowIssued {
		return c.rows[0].Load()
	}
	for i, x := range causeList {
		if string(x) == outcome {
			return c.rows[1+i].Load()
		}
	}
	return 0
}

// applied counts a chunk the store applied, with its counts n.
func (c *DistributionCounters) applied(n TaskCounts, again bool) {
	if again {
		c.ChunksRedelivered.Add(1)
	} else {
		c.ChunksApplied.Add(1)
	}
	f := n.Failed
	for i, v := range [...]int64{n.Issued, f.InvalidID, f.InexactNumber, f.Duplicate, f.LimitReached, f.OutOfStock, f.TemplateInactive, f.NotEligible} {
		if v != 0 {
			c.rows[i].Add(v)
		}
	}
}
