package bench

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/cmd/quan/internal/cli"
	"github.com/quanhq/quan/notify"
)

// walletRemind measures the expiry reminders of n available coupons that
// all end within the next day: notify.Reminders.Remind in batches, as the
// sweeper of `quan serve` runs it, recording a notification per coupon and
// channel of --channels. It fails unless every coupon was reminded once on
// every channel.
func (c *Command) walletRemind(ctx context.Context, args []string) error {
	e, err := c.openWalletEnv(ctx, "remind", args)
	if err != nil {
		return err
	}
	defer e.close()
	fail := func(err error) error { return fmt.Errorf("bench wallet remind: %w", err) }
	chans, err := quan.ParseNotifyTypes(e.b.Channels)
	if err != nil || len(chans) == 0 {
		return cli.Usagef("bench wallet remind: --channels %q: name one or more of inbox, popup, email, sms", e.b.Channels)
	}
	out, n, st := c.Stdout, e.b.N, e.app.Backends.Store
	// The demo template is active: its reminder is set in the store, as a
	// draft would have been given it.
	if e.tpl, err = st.UpdateTemplate(ctx, quan.AnyShop, e.tpl.ID, "bench", quan.ActionUpdate, func(t *quan.Template) error {
		t.RemindBefore, t.RemindChannels = quan.Duration(24*time.Hour), chans
		return nil
	}); err != nil {
		return fail(err)
	}
	now := e.now().Truncate(time.Microsecond)
	// The coupons end over the next day, a chunk of walletSeedRows at a
	// time, rising with their ids as a distribution lays them: every one
	// is due a reminder now.
	chunks := (n + walletSeedRows - 1) / walletSeedRows
	began := time.Now()
	if err := e.raw.Seed(ctx, e.tpl, 1, n, walletSeedRows, now.Add(-48*time.Hour), func(k int) time.Time {
		return now.Add(time.Hour + time.Duration(k)*(22*time.Hour)/time.Duration(max(chunks, 1)))
	}, now.Add(-48*time.Hour)); err != nil {
		return fail(fmt.Errorf("seed: %w", err))
	}
	seeded := time.Since(began)
	fmt.Fprintf(out, "bench wallet remind: store %s, %s available coupons of template %d ending within the next day, remindBefore 24h on %s, batch %s, %d sweeping at once; seeded in %s (not timed); %d cores (GOMAXPROCS %d)\n",
		e.setup, cli.Thousands(int64(n)), e.tpl.ID, e.b.Channels, cli.Thousands(int64(e.b.Batch)), e.b.Sweepers,
		seeded.Round(time.Millisecond), runtime.NumCPU(), runtime.GOMAXPROCS(0))

	svc := &notify.Reminders{Store: st, Templates: st, Now: func() time.Time { return now }, Logger: e.app.Logger}
	stop, err := e.profile()
	if err != nil {
		return fail(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		total int
		errs  []error
	)
	began = time.Now()
	for range e.b.Sweepers {
		wg.Go(func() {
			k, _, err := svc.Remind(ctx, e.b.Batch)
			mu.Lock()
			defer mu.Unlock()
			total += k
			if err != nil {
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	took := time.Since(began)
	stop()
	if len(errs) > 0 {
		return fail(errs[0])
	}
	fmt.Fprintf(out, "bench wallet remind: %s coupons reminded (%s notifications recorded) in %s: %s coupons/s (%d cores)\n",
		cli.Thousands(int64(total)), cli.Thousands(int64(total*len(chans))), took.Round(time.Millisecond),
		cli.Thousands(perSec(total, took)), runtime.NumCPU())

	// Verify: every coupon once, nothing left due, each coupon's
	// notifications recorded (the first, the middle and the last).
	if total != n {
		return fail(fmt.Errorf("%s coupons reminded, want %s", cli.Thousands(int64(total)), cli.Thousands(int64(n))))
	}
	if k, _, err := svc.Remind(ctx, e.b.Batch); err != nil || k != 0 {
		return fail(fmt.Errorf("a second sweep reminded %d more (%v), want none", k, err))
	}
	ids, err := e.raw.CouponIDs(ctx, e.tpl.ID, 1, n)
	if err != nil {
		return fail(err)
	}
	for _, k := range []int{0, n / 2, n - 1} {
		for _, ch := range chans {
			src := fmt.Sprintf("expiring:coupon:%d", ids[k])
			if _, err := st.Notification(ctx, src, int64(k)+1, ch); err != nil {
				return fail(fmt.Errorf("verify %s of user %d on %s: %w", src, k+1, ch, err))
			}
		}
	}
	fmt.Fprintf(out, "bench wallet remind: verified: %s coupons each reminded once, none left due\n", cli.Thousands(int64(n)))
	return nil
}
