package bench

import (
	"context"
	"flag"
	"fmt"
	"net/http/httptest"
	"os"
	"runtime"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/cmd/quan/internal/app"
	"github.com/quanhq/quan/cmd/quan/internal/cli"
	"github.com/quanhq/quan/mail"
	"github.com/quanhq/quan/notify"
	"github.com/quanhq/quan/sms"
)

// notifyRecordBatch is how many notifications one queueing transaction
// records.
const notifyRecordBatch = 10_000

// benchSMSSecret signs the requests to the bench's own gateway.
const benchSMSSecret = "quan-bench-notify-sms-secret-32b"

// notify measures the dispatcher: --sms and --email notifications queued
// in the store (not timed), then sent by quan's Dispatcher through the
// real sms.Sender to a gateway in this process (sms.Receiver, checking
// every signature) and through the real mail.Sender to an SMTP server in
// this process (go-smtp), one channel after the other. It prints each
// channel's messages a second and verifies that the provider received
// every message once and the store has every one sent.
func (c *Command) notify(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench notify", flag.ContinueOnError)
	var cfg app.Config
	cfg.RegisterBackends(fs, app.Local)
	nSMS := fs.Int("sms", 200_000, "SMS to queue and send")
	nMail := fs.Int("email", 20_000, "emails to queue and send")
	smsRate := fs.Float64("sms-rate", 0, "SMS a second the dispatcher sends at most (0: no limit; quan serve's default is 1000)")
	emailRate := fs.Float64("email-rate", 0, "emails a second the dispatcher sends at most (0: no limit; quan serve's default is 200)")
	batch := fs.Int("batch", notify.DefaultDispatchBatch, "messages the dispatcher takes from the store at once")
	conc := fs.Int("concurrency", notify.DefaultDispatchConcurrency, "batches of a channel in flight at once")
	conns := fs.Int("smtp-conns", mail.DefaultConns, "SMTP connections the mail sender keeps")
	var fresh freshDB
	fresh.registerFreshDB(fs, "bench notify", "Without it, give an empty database.")
	if err := c.parse(fs, args); err != nil {
		return err
	}
	switch {
	case *nSMS < 0 || *nMail < 0 || *nSMS+*nMail == 0:
		return cli.Usagef("bench notify: --sms and --email: 0 or more, not both 0")
	case *smsRate < 0 || *emailRate < 0:
		return cli.Usagef("bench notify: --sms-rate and --email-rate: 0 (no limit) or more")
	case *batch < 1 || *conc < 1 || *conns < 1:
		return cli.Usagef("bench notify: --batch, --concurrency and --smtp-conns: at least 1")
	}
	if err := fresh.checkFreshDB(cfg); err != nil {
		return err
	}
	if !cli.IsSet(fs, "data") {
		dir, err := os.MkdirTemp("", "quan-bench-notify-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		cfg.DataDir = dir
	}
	drop, err := fresh.isolate(ctx, c.Stderr, &cfg)
	if err != nil {
		return err
	}
	defer drop()
	a, err := c.openApp(ctx, cfg, app.Local)
	if err != nil {
		return err
	}
	defer a.Close()
	st := a.Backends.Store
	store, _, _ := app.Kinds(a.Config)
	out := c.Stdout
	fmt.Fprintf(out, "bench notify: store %s%s, %s SMS and %s emails, batch %d, %d in flight a channel, rates %s; %d cores (GOMAXPROCS %d)\n",
		store, fresh.database(), cli.Thousands(int64(*nSMS)), cli.Thousands(int64(*nMail)), *batch, *conc,
		rates(*smsRate, *emailRate), runtime.NumCPU(), runtime.GOMAXPROCS(0))

	began := time.Now()
	if err := queueNotifications(ctx, st, quan.NotifySMS, *nSMS); err != nil {
		return fmt.Errorf("bench notify: %w", err)
	}
	if err := queueNotifications(ctx, st, quan.NotifyEmail, *nMail); err != nil {
		return fmt.Errorf("bench notify: %w", err)
	}
	fmt.Fprintf(out, "bench notify: queued in %s (not timed)\n", time.Since(began).Round(time.Millisecond))

	d := func(ch quan.NotifyType, s quan.Sender, r float64) *notify.Dispatcher {
		return &notify.Dispatcher{Store: st, Contacts: st, Senders: map[quan.NotifyType]quan.Sender{ch: s},
			Rates: map[quan.NotifyType]float64{ch: r}, Owner: "bench-notify", Batch: *batch, Concurrency: *conc,
			Logger: a.Logger}
	}
	var failed error
	if *nSMS > 0 {
		ids := newIDCounter()
		gw := httptest.NewServer(&sms.Receiver{Secret: benchSMSSecret, Accept: func(ms []sms.Received) error {
			got := make([]string, len(ms))
			for i, m := range ms {
				got[i] = m.ID
			}
			ids.add(got...)
			return nil
		}})
		defer gw.Close()
		s, err := sms.New(sms.Config{URL: gw.URL, Secret: benchSMSSecret, Logger: a.Logger})
		if err != nil {
			return fmt.Errorf("bench notify: %w", err)
		}
		if err := c.sendAll(ctx, d(quan.NotifySMS, s, *smsRate), st, quan.NotifySMS, *nSMS, ids, "SMS"); err != nil {
			failed = err
		}
	}
	if *nMail > 0 {
		ids := newIDCounter()
		sink, err := startSMTPSink(ids)
		if err != nil {
			return fmt.Errorf("bench notify: smtp server: %w", err)
		}
		defer sink.Close()
		m, err := mail.New(mail.Config{URL: "smtp://" + sink.Addr + "?from=noreply@quan.test&tls=none", Conns: *conns, Logger: a.Logger,
			Unsubscribe: func(m quan.Outgoing) string { return "http://127.0.0.1/api/v1/unsubscribe?t=" + m.ID }})
		if err != nil {
			return fmt.Errorf("bench notify: %w", err)
		}
		defer m.Close()
		if err := c.sendAll(ctx, d(quan.NotifyEmail, m, *emailRate), st, quan.NotifyEmail, *nMail, ids, "emails"); err != nil && failed == nil {
			failed = err
		}
	}
	return failed
}

func rates(sms, email float64) string {
	r := func(v float64) string {
		if v == 0 {
			return "none"
		}
		return cli.Thousands(int64(v)) + "/s"
	}
	return "SMS " + r(sms) + ", email " + r(email)
}

// benchSource is the source of the bench's notifications of ch.
func benchSource(ch quan.NotifyType) string { return "bench:" + string(ch) }

// queueNotifications records n notifications of ch, to users 1 … n.
func queueNotifications(ctx context.Context, st quan.NotificationStore, ch quan.NotifyType, n int) error {
	vars := quan.MessageVars{TemplateName: "新人券", AmountOff: 2000, Threshold: 10000, ValidUntil: time.Date(2030, 12, 31, 15, 59, 0, 0, time.UTC), Link: "https://q.cn/Ab3dE9"}
	ns := make([]*quan.Notification, 0, notifyRecordBatch)
	for first := 1; first <= n; first += notifyRecordBatch {
		ns = ns[:0]
		for u := first; u < first+notifyRecordBatch && u <= n; u++ {
			addr := fmt.Sprintf("+86138%08d", u)
			if ch == quan.NotifyEmail {
				addr = fmt.Sprintf("u%d@example.com", u)
			}
			ns = append(ns, &quan.Notification{Source: benchSource(ch), UserID: int64(u), Channel: ch, Address: addr,
				Kind: quan.MessageIssued, Lang: quan.LangZH, Vars: vars})
		}
		if _, err := st.RecordNotifications(ctx, time.Now(), ns); err != nil {
			return fmt.Errorf("queue %s: %w", ch, err)
		}
	}
	return nil
}

// sendAll runs d until it has handled n messages of ch, prints the rate
// and verifies the provider's ids and the store's statuses.
func (c *Command) sendAll(ctx context.Context, d *notify.Dispatcher, st quan.NotificationStore, ch quan.NotifyType, n int, ids *idCounter, what string) error {
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		d.Run(runCtx)
	}()
	for {
		s := d.ChannelStats(ch)
		if s.Sent+s.Failed+s.OptedOut >= int64(n) || ctx.Err() != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	<-done
	received, distinct, last := ids.counts()
	wall := last.Sub(start)
	s := d.ChannelStats(ch)
	fmt.Fprintf(c.Stdout, "bench notify: %s %s in %s: %s %s/s (%d cores)\n", cli.Thousands(int64(n)), what, wall.Round(time.Millisecond),
		cli.Thousands(int64(float64(distinct)/wall.Seconds())), what, runtime.NumCPU())
	if err := ctx.Err(); err != nil {
		return err
	}
	counts, err := st.NotificationCounts(ctx, benchSource(ch))
	if err != nil {
		return fmt.Errorf("bench notify: %w", err)
	}
	var sent int64
	for _, k := range counts {
		if k.Channel == ch && k.Status == quan.NotificationSent {
			sent = k.Count
		}
	}
	missing := 0
	for u := 1; u <= n; u++ {
		m := quan.Notification{Source: benchSource(ch), UserID: int64(u), Channel: ch}
		if ids.has(m.MessageID()) == 0 {
			missing++
		}
	}
	if missing > 0 || distinct != int64(n) || received != distinct || sent != int64(n) || s.Failed+s.Retried > 0 {
		return fmt.Errorf("bench notify: %s: the provider received %d (%d distinct ids, %d missing), the store has %d sent, the dispatcher %+v; want %d each, once",
			what, received, distinct, missing, sent, s, n)
	}
	fmt.Fprintf(c.Stdout, "bench notify: verified: %s: every one of %s delivered once (%s distinct ids, no duplicate), none lost, all sent in the store\n",
		what, cli.Thousands(int64(n)), cli.Thousands(distinct))
	return nil
}
