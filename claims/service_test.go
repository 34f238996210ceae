package claims_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/claims"
	"github.com/quanhq/quan/internal/testrig"
)

// countingBus counts the claim messages published and the claims in
// them, and holds each publish a moment, as a busy bus does, so that
// claims arriving meanwhile queue up for the next message.
type countingBus struct {
	quan.Bus
	mu                 sync.Mutex
	messages, claims   int
	largest            int
	undecodable, other int
}

func (b *countingBus) PublishMany(ctx context.Context, ms []quan.Message) error {
	time.Sleep(5 * time.Millisecond)
	b.mu.Lock()
	for _, m := range ms {
		if m.Subject != quan.ClaimBatchSubject {
			b.other++
			continue
		}
		cs, err := quan.DecodeClaims(m.Data)
		if err != nil || !strings.HasPrefix(m.ID, "claims:"+cs[0].ID+":") {
			b.undecodable++
			continue
		}
		b.messages++
		b.claims += len(cs)
		b.largest = max(b.largest, len(cs))
	}
	b.mu.Unlock()
	return b.Bus.PublishMany(ctx, ms)
}

// TestClaimHandoffBatches: concurrent claims go to the bus in far fewer
// messages than claims, none above MaxClaimsPerMessage, and every
// accepted claim is persisted with its coupon.
func TestClaimHandoffBatches(t *testing.T) {
	const nClaims = 1200
	r := testrig.NewClaimRig(t, nClaims)
	counted := &countingBus{Bus: r.Bus}
	r.S.Bus = counted
	r.Serve(t)
	var (
		wg  sync.WaitGroup
		ids = make([]string, nClaims)
	)
	for i := range nClaims {
		wg.Go(func() {
			c, err := r.S.Claim(t.Context(), quan.Identity{Role: quan.RoleUser, UserID: int64(1 + i)}, r.Tpl.ID, "")
			if err != nil {
				t.Errorf("claim of user %d: %v", 1+i, err)
				return
			}
			ids[i] = c.ID
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	testrig.WaitFor(t, "every claim decided", func() bool { return r.S.Counters.Issued.Load()+r.S.Counters.Failed.Load() >= nClaims })
	counted.mu.Lock()
	defer counted.mu.Unlock()
	if counted.claims != nClaims || counted.undecodable != 0 || counted.other != 0 {
		t.Fatalf("the bus carried %d claims, %d undecodable messages and %d others; want %d claims", counted.claims, counted.undecodable, counted.other, nClaims)
	}
	if counted.messages >= nClaims/4 || counted.largest > quan.MaxClaimsPerMessage {
		t.Errorf("%d claims went in %d messages of at most %d; want fewer than %d, none above %d",
			nClaims, counted.messages, counted.largest, nClaims/4, quan.MaxClaimsPerMessage)
	}
	t.Logf("%d claims in %d messages, the largest of %d", nClaims, counted.messages, counted.largest)
	for _, id := range ids {
		c, err := r.Store.Claim(t.Context(), id)
		if err != nil || c.Status != quan.ClaimIssued || c.CouponID == 0 {
			t.Fatalf("claim %s: %+v, %v; want issued", id, c, err)
		}
	}
	if got := r.S.Counters.Issued.Load(); got != nClaims {
		t.Errorf("%d claims counted issued, want %d", got, nClaims)
	}
	r.AssertStock(t, 0)
}

// TestClaimBatchStoreRefusesOne: the store refuses one claim of a batch
// (it was accepted before the template issued); only that claim fails and
// gives its reservation back.
func TestClaimBatchStoreRefusesOne(t *testing.T) {
	r := testrig.NewClaimRig(t, 10)
	cs := r.Reserve(t, 1, 2, 3)
	cs[1].At = testrig.IssueStart.Add(-time.Minute)
	r.PublishBatch(t, cs)
	r.Serve(t)
	testrig.WaitFor(t, "3 claims decided", func() bool { return r.S.Counters.Issued.Load()+r.S.Counters.Failed.Load() >= 3 })

	for i, c := range cs {
		rec, err := r.Store.Claim(t.Context(), c.ID)
		if err != nil {
			t.Fatal(err)
		}
		want, reason := quan.ClaimIssued, ""
		if i == 1 {
			want, reason = quan.ClaimFailed, string(quan.CauseTemplateInactive)
		}
		if rec.Status != want || rec.Reason != reason {
			t.Errorf("claim of user %d: %s %q, want %s %q", c.UserID, rec.Status, rec.Reason, want, reason)
		}
		held, err := r.Cache.Held(t.Context(), r.Tpl.ID, c.UserID)
		if wantHeld := int64(1 - i%2); err != nil || held != wantHeld {
			t.Errorf("the cache counts user %d holding %d (%v), want %d", c.UserID, held, err, wantHeld)
		}
	}
	if r.S.Counters.Issued.Load() != 2 || r.S.Counters.Failed.Load() != 1 || r.S.Counters.Compensated.Load() != 1 {
		t.Errorf("counters: %d issued, %d failed, %d compensated; want 2, 1, 1",
			r.S.Counters.Issued.Load(), r.S.Counters.Failed.Load(), r.S.Counters.Compensated.Load())
	}
	r.AssertStock(t, 8)
}

// dowclaims is a claim store whose IssueClaims always fails.
type downClaims struct {
	quan.ClaimStore
	calls atomic.Int64
}

func (d *downClaims) IssueClaims(context.Context, []*quan.Claim, time.Time) ([]*quan.Claim, error) {
	d.calls.Add(1)
	return nil, errors.New("the store is down")
}

// TestClaimBatchDeadLettered: a batch the store never takes is
// dead-lettered after MaxDeliver deliveries; every claim in it ends failed
// and gives its reservation back.
func TestClaimBatchDeadLettered(t *testing.T) {
	r := testrig.NewClaimRig(t, 10)
	down := &downClaims{ClaimStore: r.Store}
	r.S.Claims = down
	cs := r.Reserve(t, 1, 2, 3)
	r.PublishBatch(t, cs)
	r.Serve(t)
	testrig.WaitFor(t, "3 reservations given back", func() bool { return r.S.Counters.Compensated.Load() >= 3 })

	for _, c := range cs {
		rec, err := r.Store.Claim(t.Context(), c.ID)
		if err != nil || rec.Status != quan.ClaimFailed || rec.Reason != quan.ReasonHandoffFailed {
			t.Errorf("claim of user %d: %+v, %v; want failed by the dead letter", c.UserID, rec, err)
		}
		if held, err := r.Cache.Held(t.Context(), r.Tpl.ID, c.UserID); err != nil || held != 0 {
			t.Errorf("the cache counts user %d holding %d (%v), want 0", c.UserID, held, err)
		}
	}
	// Retried counts claims per failed delivery: 3 claims, 2 deliveries.
	if r.S.Counters.DeadLettered.Load() != 3 || r.S.Counters.Retried.Load() != 6 || down.calls.Load() != 2 {
		t.Errorf("%d dead-lettered, %d retried in %d store calls; want 3, 6 in 2",
			r.S.Counters.DeadLettered.Load(), r.S.Counters.Retried.Load(), down.calls.Load())
	}
	r.AssertStock(t, 10)
}

// TestClaimPersistPaced: with a PersistRate, claims accepted within the
// last second are written to the store at that rate, and a backlog of
// claims accepted longer ago at once. The pace's clock stands still, so
// each batch waits as long as the claims before it take at the rate.
func TestClaimPersistPaced(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after time.Duration // how long after the claims the consumer starts
		paced bool
	}{
		{"WhileClaimsArrive", 0, true},
		{"Backlog", 2 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// More claims than two store transactions take
			// (MaxClaimsPerTransaction): however the bus and the persist
			// batcher group them, they go in three or more batches.
			const nClaims, rate = 2*quan.MaxClaimsPerTransaction + 200, 1000
			r := testrig.NewClaimRig(t, nClaims)
			r.S.PersistRate = rate
			var (
				now   atomic.Int64
				mu    sync.Mutex
				waits []time.Duration
			)
			now.Store(time.Date(2030, 3, 14, 9, 0, 0, 0, time.UTC).UnixNano())
			claims.SetPaceClock(r.S, func() time.Time { return time.Unix(0, now.Load()) }, func(ctx context.Context, d time.Duration) error {
				mu.Lock()
				defer mu.Unlock()
				waits = append(waits, d)
				return nil
			})
			var wg sync.WaitGroup
			for u := range int64(nClaims) {
				wg.Go(func() {
					if _, err := r.S.Claim(t.Context(), quan.Identity{Role: quan.RoleUser, UserID: 1 + u}, r.Tpl.ID, ""); err != nil {
						t.Errorf("claim of user %d: %v", 1+u, err)
					}
				})
			}
			wg.Wait()
			now.Add(int64(tc.after))
			r.Serve(t)
			testrig.WaitFor(t, "every claim issued", func() bool { return r.S.Counters.Issued.Load() == nClaims })
			r.AssertStock(t, 0)

			mu.Lock()
			defer mu.Unlock()
			if !tc.paced {
				if len(waits) != 0 {
					t.Errorf("a backlog of claims accepted %s before waited %v", tc.after, waits)
				}
				return
			}
			if len(waits) == 0 {
				t.Fatal("no batch of claims waited while claims arrived")
			}
			for i, d := range waits {
				if d <= 0 || d >= nClaims*time.Second/rate || d%(time.Second/rate) != 0 || (i > 0 && d <= waits[i-1]) {
					t.Fatalf("waits %v: want each batch later than the one before, by 1 ms a claim, all under %s", waits, nClaims*time.Second/rate)
				}
			}
		})
	}
}

// TestClaimTransactionsShareMessages: the claims of the messages handled
// at once meet in one store transaction, up to MaxClaimsPerTransaction:
// while the first transaction is held, the messages handled meanwhile
// queue up together.
func TestClaimTransactionsShareMessages(t *testing.T) {
	const messages, nClaims = 6, 6 * quan.MaxClaimsPerMessage
	r := testrig.NewClaimRig(t, nClaims)
	users := make([]int64, nClaims)
	for i := range users {
		users[i] = int64(1 + i)
	}
	for part := range slices.Chunk(r.Reserve(t, users...), quan.MaxClaimsPerMessage) {
		r.PublishBatch(t, part)
	}
	rec := &txSizes{ClaimStore: r.S.Claims, release: make(chan struct{})}
	r.S.Claims = rec
	handled := &handlersEntered{Bus: r.S.Bus}
	r.S.Bus = handled
	r.Serve(t)
	testrig.WaitFor(t, "every message handed to a handler", func() bool { return handled.n.Load() == messages })
	time.Sleep(200 * time.Millisecond) // for the last of them to queue its claims
	close(rec.release)
	testrig.WaitFor(t, "every claim issued", func() bool { return r.S.Counters.Issued.Load() == nClaims })
	r.AssertStock(t, 0)

	rec.mu.Lock()
	defer rec.mu.Unlock()
	if m := slices.Max(rec.sizes); m <= quan.MaxClaimsPerMessage || m > quan.MaxClaimsPerTransaction {
		t.Errorf("transactions of %v claims; want one of more than a message's %d, none of more than %d", rec.sizes, quan.MaxClaimsPerMessage, quan.MaxClaimsPerTransaction)
	}
}

// txSizes is a ClaimStore that records how many claims each IssueClaims
// decides, and holds the first until release is closed.
type txSizes struct {
	quan.ClaimStore
	release chan struct{}
	mu      sync.Mutex
	sizes   []int
}

func (s *txSizes) IssueClaims(ctx context.Context, cs []*quan.Claim, now time.Time) ([]*quan.Claim, error) {
	s.mu.Lock()
	first := len(s.sizes) == 0
	s.sizes = append(s.sizes, len(cs))
	s.mu.Unlock()
	if first {
		<-s.release
	}
	return s.ClaimStore.IssueClaims(ctx, cs, now)
}

// handlersEntered is a Bus that counts the messages handed to its
// consumers' handlers.
type handlersEntered struct {
	quan.Bus
	n atomic.Int64
}

func (b *handlersEntered) Consume(ctx context.Context, subject, durable string, opt quan.ConsumeOptions, handle func(context.Context, quan.Message) error) error {
	return b.Bus.Consume(ctx, subject, durable, opt, func(ctx context.Context, m quan.Message) error {
		b.n.Add(1)
		return handle(ctx, m)
	})
}

// TestClaimPersistRateInvalid: a rate under MinPersistRate is refused
// before anything is consumed.
func TestClaimPersistRateInvalid(t *testing.T) {
	r := testrig.NewClaimRig(t, 1)
	r.S.PersistRate = claims.MinPersistRate - 1
	err := r.S.ServeClaims(t.Context())
	if quan.ErrorCode(err) != quan.EINVALID || !strings.Contains(err.Error(), "persist rate 999") {
		t.Fatalf("ServeClaims with persist rate 999: %v", err)
	}
}

// failingBus refuses every publish with an error that names the servers.
type failingBus struct{ quan.Bus }

func (failingBus) PublishMany(context.Context, []quan.Message) error {
	return errors.New("nats: no responders on 10.1.2.3:4222")
}

// TestClaimHandoffFails: a claim the bus refuses is answered unavailable,
// with no word of the servers' error, and its reservation is given back.
func TestClaimHandoffFails(t *testing.T) {
	r := testrig.NewClaimRig(t, 5)
	r.S.Bus = failingBus{r.Bus}
	_, err := r.S.Claim(t.Context(), quan.Identity{Role: quan.RoleUser, UserID: 1}, r.Tpl.ID, "")
	if quan.ErrorCode(err) != quan.EUNAVAILABLE {
		t.Fatalf("claim: %v, want unavailable", err)
	}
	if msg := quan.ErrorMessage(err); strings.Contains(msg, "10.1.2.3") || strings.Contains(msg, "nats") {
		t.Errorf("the client is told the servers' error: %q", msg)
	}
	st, err := r.Cache.State(t.Context(), r.Tpl.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st.Stock != 5 {
		t.Errorf("stock %d after a claim that was not handed off, want 5", st.Stock)
	}
}

// slowBus takes its time to store a hand-off, so that the claims arriving
// meanwhile go together in the next batch.
type slowBus struct{ quan.Bus }

func (b slowBus) PublishMany(ctx context.Context, ms []quan.Message) error {
	time.Sleep(50 * time.Millisecond)
	return b.Bus.PublishMany(ctx, ms)
}

// TestClaimRetryBatchedWithOthers: a retry with its key hands its claim
// off again, first in a batch with another user's claim: both are
// persisted (the batch is not taken for the first try's and dropped).
func TestClaimRetryBatchedWithOthers(t *testing.T) {
	r := testrig.NewClaimRig(t, 10)
	r.S.Bus = slowBus{r.Bus}
	r.Serve(t)
	user := func(id int64) quan.Identity { return quan.Identity{Role: quan.RoleUser, UserID: id} }
	first, err := r.S.Claim(t.Context(), user(7), r.Tpl.ID, "k")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var other *quan.Claim
	wg.Go(func() { r.S.Claim(t.Context(), user(9), r.Tpl.ID, "") }) // holds the hand-off for 50 ms
	time.Sleep(10 * time.Millisecond)
	wg.Go(func() { r.S.Claim(t.Context(), user(7), r.Tpl.ID, "k") }) // the retry, first in the next batch
	time.Sleep(10 * time.Millisecond)
	wg.Go(func() {
		var err error
		if other, err = r.S.Claim(t.Context(), user(8), r.Tpl.ID, ""); err != nil {
			t.Error(err)
		}
	})
	wg.Wait()
	for _, id := range []string{first.ID, other.ID} {
		testrig.WaitFor(t, "claim "+id+" issued", func() bool {
			rec, err := r.Store.Claim(t.Context(), id)
			return err == nil && rec.Status == quan.ClaimIssued
		})
	}
}
