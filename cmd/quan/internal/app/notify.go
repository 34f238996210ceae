package app

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/cmd/quan/internal/cli"
	"github.com/quanhq/quan/mail"
	"github.com/quanhq/quan/notify"
	"github.com/quanhq/quan/prom"
	"github.com/quanhq/quan/sheet"
	"github.com/quanhq/quan/sms"
)

// Notify configures the notification channels: what users see in the
// app, and the dispatcher of email and SMS when their providers are set.
type Notify struct {
	SMTPURL        string  // smtp://user:pass@host:587?from=…; "" sends no email
	UnsubscribeURL string  // the one-click unsubscribe page every mail links; required with SMTPURL
	SMSURL         string  // the SMS gateway (package sms); "" sends no SMS
	SMSSecret      string  // its signing secret
	SMSRate        float64 // SMS a second, per process; 0: no limit
	EmailRate      float64 // emails a second, per process; 0: no limit
	QuietHours     string  // HH:MM-HH:MM, or off
	QuietTZ        string  // the quiet hours' time zone
	InboxRetention time.Duration
	// Lease is how long a dispatcher holds a batch: a process that dies
	// mid-batch leaves it to the others for this long. 0 is
	// quan.DefaultDispatchLease.
	Lease time.Duration
}

// Notification defaults.
const (
	DefaultSMSRate    = 1000
	DefaultEmailRate  = 200
	DefaultQuietHours = "22:00-08:00"
	DefaultQuietTZ    = "Asia/Shanghai"
)

// registerNotify binds the notification flags to n.
func (n *Notify) register(fs *flag.FlagSet) {
	fs.StringVar(&n.SMTPURL, "smtp-url", "", "send email through this SMTP server: smtp://USER:PASS@HOST:587?from=ADDR (STARTTLS) or smtps://…:465 (default: no email)")
	fs.StringVar(&n.UnsubscribeURL, "unsubscribe-url", "", "with --smtp-url: the https page every mail links to unsubscribe (a signed t= parameter is added)")
	fs.StringVar(&n.SMSURL, "sms-url", "", "send SMS through this gateway (quan's signed JSON protocol, see package sms) (default: no SMS)")
	fs.StringVar(&n.SMSSecret, "sms-secret", "", "with --sms-url: the gateway's signing secret, at least 16 bytes")
	fs.Float64Var(&n.SMSRate, "sms-rate", DefaultSMSRate, "SMS a second this process sends at most (per process: N processes send up to N times as many; 0: no limit)")
	fs.Float64Var(&n.EmailRate, "email-rate", DefaultEmailRate, "emails a second this process sends at most (per process; 0: no limit)")
	fs.StringVar(&n.QuietHours, "quiet-hours", DefaultQuietHours, "no email or SMS in this daily window (HH:MM-HH:MM, or off): they wait until it ends")
	fs.StringVar(&n.QuietTZ, "quiet-tz", DefaultQuietTZ, "the time zone of --quiet-hours")
	fs.DurationVar(&n.Lease, "notify-lease", notify.DefaultDispatchLease, "how long a dispatcher holds a batch of email or SMS: a process that dies mid-batch leaves it to the others for this long (longer than a batch takes to send)")
	fs.DurationVar(&n.InboxRetention, "inbox-retention", notify.DefaultInboxRetention, "how long inbox and popup messages are kept (0: for ever)")
}

func (n Notify) withDefaults() Notify {
	if n.QuietHours == "" {
		n.QuietHours = DefaultQuietHours
	}
	if n.QuietTZ == "" {
		n.QuietTZ = DefaultQuietTZ
	}
	return n
}

// quiet parses the quiet hours. Asia/Shanghai needs no tzdata on the
// host: it is China Standard Time, without daylight saving time.
func (n Notify) quiet() (notify.QuietHours, error) {
	loc, err := time.LoadLocation(n.QuietTZ)
	if err != nil && n.QuietTZ == DefaultQuietTZ {
		loc, err = time.FixedZone("CST", 8*3600), nil
	}
	if err != nil {
		return notify.QuietHours{}, cli.Usagef("--quiet-tz %q: %v", n.QuietTZ, err)
	}
	q, err := notify.ParseQuietHours(n.QuietHours, loc)
	if err != nil {
		return notify.QuietHours{}, cli.Usagef("--quiet-hours: %v", err)
	}
	return q, nil
}

// validate reports the first notification setting that cannot work.
func (n Notify) validate() error {
	if _, err := n.quiet(); err != nil {
		return err
	}
	switch {
	case n.SMTPURL != "" && n.UnsubscribeURL == "":
		return cli.Usagef("--smtp-url needs --unsubscribe-url: every mail carries an unsubscribe link")
	case n.SMSURL != "" && n.SMSSecret == "":
		return cli.Usagef("--sms-url needs --sms-secret (or QUAN_SMS_SECRET)")
	case n.SMSRate < 0 || n.EmailRate < 0:
		return cli.Usagef("--sms-rate and --email-rate: 0 (no limit) or more")
	case n.Lease < 0:
		return cli.Usagef("--notify-lease: 0 (the default, %v) or more", notify.DefaultDispatchLease)
	}
	return nil
}

// buildNotify makes the inbox service and, if a provider is configured,
// the dispatcher with its senders. The key of the unsubscribe links is
// kept in the store, so that a link any process signed is good on every
// API server of the store.
func (a *App) buildNotify(ctx context.Context) error {
	cfg, st := a.Config.Notify, a.Backends.Store
	secret, err := st.Secret(ctx, quan.SecretUnsubscribe)
	if err != nil {
		return fmt.Errorf("unsubscribe links: %w", err)
	}
	key := notify.UnsubscribeKey(secret)
	a.Notices = &notify.Service{Store: st, Contacts: st, UnsubscribeKey: key, Now: a.Config.Now,
		// A contacts import is kept and read like a distribution file.
		Files:       a.Tasks.Files,
		OpenRows:    func(path string) (quan.RowReader, error) { return sheet.OpenRows(path, a.SheetOptions("")) },
		MaxFileSize: a.Config.Files.MaxUpload,
	}
	senders := map[quan.NotifyType]quan.Sender{}
	if cfg.SMTPURL != "" {
		unsub, err := mail.UnsubscribeLink(cfg.UnsubscribeURL, func(m quan.Outgoing) string { return key.Token(m.ID) })
		if err != nil {
			return cli.Usagef("--unsubscribe-url: %v", err)
		}
		m, err := mail.New(mail.Config{URL: cfg.SMTPURL, Unsubscribe: unsub, Logger: a.Logger})
		if err != nil {
			return cli.Usagef("--smtp-url: %v", err)
		}
		a.Backends.closers = append(a.Backends.closers, func() { m.Close() })
		senders[quan.NotifyEmail] = m
	}
	if cfg.SMSURL != "" {
		s, err := sms.New(sms.Config{URL: cfg.SMSURL, Secret: cfg.SMSSecret, Logger: a.Logger})
		if err != nil {
			return cli.Usagef("--sms-url: %v", err)
		}
		senders[quan.NotifySMS] = s
	}
	if len(senders) == 0 {
		return nil
	}
	quiet, err := cfg.quiet()
	if err != nil {
		return err
	}
	a.Dispatcher = &notify.Dispatcher{
		Store:    st,
		Contacts: st,
		Senders:  senders,
		Rates:    map[quan.NotifyType]float64{quan.NotifySMS: cfg.SMSRate, quan.NotifyEmail: cfg.EmailRate},
		Quiet:    quiet,
		Owner:    runnerName(),
		Lease:    cfg.Lease,
		Now:      a.Config.Now,
		Logger:   a.Logger,
	}
	if a.Metrics != nil {
		a.Metrics.MustRegister(prom.Notifications(a.Dispatcher, st, a.Config.Now))
	}
	return nil
}

// startNotify runs the dispatcher, if any, and the inbox retention sweep.
func (a *App) startNotify(loop func(name string, run func(context.Context) error)) {
	if a.Dispatcher != nil {
		loop("notification dispatcher", a.Dispatcher.Run)
	}
	if a.Notices != nil && a.Config.Notify.InboxRetention > 0 && a.Config.SweepEvery > 0 {
		loop("inbox sweeper", a.sweepInbox)
	}
}

// sweepInbox deletes inbox and popup messages older than the retention
// every SweepEvery, in batches.
func (a *App) sweepInbox(ctx context.Context) error {
	tick := time.NewTicker(a.Config.SweepEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		n, err := a.Notices.Sweep(ctx, a.Config.Notify.InboxRetention, 10_000)
		switch {
		case err != nil && ctx.Err() == nil:
			a.Logger.Warn("delete old inbox messages", "err", err)
		case n > 0:
			a.Logger.Info("old inbox messages deleted", "rows", n)
		}
	}
}
