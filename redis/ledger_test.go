package redis

import (
	"slices"
	"testing"
	"time"

	"github.com/quanhq/quan"
)

// TestClaimLedger: a claim that reserved a coupon is in the ledger from
// the same script call; a refused one and a replay are not; Handed takes
// claims out and says where each was; Abandoned hands the old ones to the
// reaper (again, until Reaped), and Handed then answers HandedReaping.
func TestClaimLedger(t *testing.T) {
	c := newTestCache(t)
	ctx := t.Context()
	loadTemplate(t, c, 1, 2)
	reserve := func(key string, user int64, at time.Time) []quan.Refusal {
		t.Helper()
		refused, _, out, err := c.ReserveLimited(ctx, 1, key, []int64{user}, at, nil)
		if err != nil || refused != -1 {
			t.Fatalf("reserve %s: %d %v", key, refused, err)
		}
		return out
	}
	old, young := limitedNow, limitedNow.Add(30*time.Second)
	reserve("c1-1-aaaaaaaaaaaaaaaa", 1, old)   // abandoned: never handed off
	reserve("c1-2-bbbbbbbbbbbbbbbb", 2, old)   // handed off in time
	reserve("c1-1-aaaaaaaaaaaaaaaa", 1, young) // a replay: no new entry
	if out := reserve("c1-3-cccccccccccccccc", 3, young); !slices.Equal(out, []quan.Refusal{quan.RefusedSoldOut}) {
		t.Fatalf("third claim of a stock of 2: %v", out)
	}
	unhanded := func(want int64) {
		t.Helper()
		if n, err := c.Unhanded(ctx, 1); err != nil || n != want {
			t.Fatalf("Unhanded = %d, %v; want %d", n, err, want)
		}
	}
	unhanded(2)
	hs, err := c.Handed(ctx, 1, []string{"c1-2-bbbbbbbbbbbbbbbb", "c1-3-cccccccccccccccc"})
	if err != nil || !slices.Equal(hs, []quan.Handoff{quan.HandedNow, quan.HandedBefore}) {
		t.Fatalf("handed: %v %v; want now (it was in the ledger), before (refused: never in it)", hs, err)
	}
	if hs, _ := c.Handed(ctx, 1, []string{"c1-2-bbbbbbbbbbbbbbbb"}); !slices.Equal(hs, []quan.Handoff{quan.HandedBefore}) {
		t.Fatalf("handed again: %v, want before", hs)
	}

	cutoff := limitedNow.Add(10 * time.Second)
	want := []quan.LedgerEntry{{Template: 1, Key: "c1-1-aaaaaaaaaaaaaaaa", At: old}}
	for range 2 { // a reaper that stopped before Reaped: the next gets it again
		got, err := c.Abandoned(ctx, cutoff, 100)
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("abandoned: %+v %v, want %+v", got, err, want)
		}
	}
	unhanded(1) // the reaper holds it: still not in the store's figures
	if hs, _ := c.Handed(ctx, 1, []string{"c1-1-aaaaaaaaaaaaaaaa"}); !slices.Equal(hs, []quan.Handoff{quan.HandedReaping}) {
		t.Fatalf("a claim the reaper holds: %v, want reaping", hs)
	}
	if err := c.Reaped(ctx, 1, "c1-1-aaaaaaaaaaaaaaaa"); err != nil {
		t.Fatal(err)
	}
	unhanded(0)
	if got, err := c.Abandoned(ctx, cutoff, 100); err != nil || len(got) != 0 {
		t.Fatalf("abandoned after reaped: %+v %v", got, err)
	}
	if hs, _ := c.Handed(ctx, 1, []string{"c1-1-aaaaaaaaaaaaaaaa"}); !slices.Equal(hs, []quan.Handoff{quan.HandedBefore}) {
		t.Fatalf("a reaped claim: %v, want before", hs)
	}
	// The template left the index of ledgers once both were empty.
	n, err := c.client.Do(ctx, c.client.B().Scard().Key(c.ledgers()).Build()).AsInt64()
	if err != nil || n != 0 {
		t.Fatalf("ledgers left in the index: %d %v", n, err)
	}
}
