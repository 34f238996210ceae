package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/quanhq/quan/cmd/quan/internal/cli"
	"github.com/quanhq/quan/sms"
)

// SMSSinkCommand is `quan sms-sink`: an SMS gateway for trying quan out.
// It speaks quan's gateway protocol (package sms), checks every
// request's signature, answers every message sent, and prints each as a
// line on stdout instead of sending it. Like a real gateway it drops a
// message whose id it printed before (a batch sent again after quan was
// killed before it heard the answer), printing on stderr how many it
// dropped; it remembers only the last --remember ids, in memory, so it
// is no gateway to put in front of a real provider.
type SMSSinkCommand struct {
	Main *Main
	// Ready, if set, is called with the URL to give quan's --sms-url once
	// the sink listens (tests).
	Ready func(url string)
}

// Run serves until ctx ends.
func (c *SMSSinkCommand) Run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("sms-sink", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:9099", "address to listen on")
	secret := fs.String("sms-secret", "", "the signing secret quan's --sms-secret has, at least 16 bytes")
	remember := fs.Int("remember", 100_000, "how many message ids to remember, the latest, to drop a message sent again")
	if _, err := c.Main.parse(fs, args); err != nil {
		return err
	}
	if *remember < 1 {
		return cli.Usagef("sms-sink: --remember %d: want at least 1", *remember)
	}
	if len(*secret) < 16 {
		return cli.Usagef("sms-sink: --sms-secret (or QUAN_SMS_SECRET, QUAN_SMS_SECRET_FILE): at least 16 bytes, the same as quan's")
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("sms-sink: %w", err)
	}
	var (
		mu      sync.Mutex // one message a line, whole
		printed int64
	)
	out := c.Main.Stdout
	rc := &sms.Receiver{Secret: *secret, Remember: *remember}
	rc.Accept = func(ms []sms.Received) error {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range ms {
			fmt.Fprintf(out, "sms to=%s id=%s template=%s text=%s\n", m.Phone, m.ID, m.Template, strconv.Quote(m.Text))
		}
		printed += int64(len(ms))
		return nil
	}
	rc.Dropped = func(ms []sms.Received) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(c.Main.Stderr, "quan sms-sink: dropped %d duplicate(s), printed before: %s (%d in all)\n",
			len(ms), duplicateIDs(ms), rc.Duplicates())
	}
	srv := &http.Server{Handler: rc, ReadHeaderTimeout: 10 * time.Second}
	url := "http://" + ln.Addr().String() + "/send"
	fmt.Fprintf(c.Main.Stderr, "quan sms-sink: listening; run quan with --sms-url %s and the same --sms-secret\n", url)
	if c.Ready != nil {
		c.Ready(url)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("sms-sink: %w", err)
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shut); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("sms-sink: %w", err)
	}
	mu.Lock()
	defer mu.Unlock()
	fmt.Fprintf(c.Main.Stderr, "quan sms-sink: stopped: %d messages printed, %d duplicates dropped\n", printed, rc.Duplicates())
	return nil
}

// duplicateIDs names the ids of ms, the first few of them.
func duplicateIDs(ms []sms.Received) string {
	const few = 3
	ids := make([]string, 0, few)
	for _, m := range ms[:min(len(ms), few)] {
		ids = append(ids, m.ID)
	}
	s := strings.Join(ids, ", ")
	if len(ms) > few {
		s += fmt.Sprintf(" and %d more", len(ms)-few)
	}
	return s
}
