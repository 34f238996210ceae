package main

import (
	"context"
	"strings"
	"testing"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/sms"
)

// TestSMSSink: `quan sms-sink` answers quan's SMS sender sent and prints
// each message as a line, once: a batch sent again is answered sent and
// dropped, and the sink says how many it dropped; a sender with another
// secret is refused (retried, nothing printed); without a secret it does
// not start.
func TestSMSSink(t *testing.T) {
	t.Parallel()
	const secret = "sink-secret-0123456789"
	var stdout, stderr syncBuffer
	m := &Main{Stdout: &stdout, Stderr: &stderr, Getenv: func(string) string { return "" }}
	ctx, stop := context.WithCancel(t.Context())
	urls := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- (&SMSSinkCommand{Main: m, Ready: func(u string) { urls <- u }}).Run(ctx, []string{"--addr", "127.0.0.1:0", "--sms-secret", secret})
	}()
	var url string
	select {
	case url = <-urls:
	case err := <-done:
		t.Fatalf("sms-sink stopped: %v\n%s", err, stderr.String())
	}
	msgs := []quan.Outgoing{
		{ID: "task.1_7_sms", UserID: 7, Channel: quan.NotifySMS, To: "+8613800000007", Kind: quan.MessageIssued, Text: "您获得「新人券」"},
		{ID: "task.1_8_sms", UserID: 8, Channel: quan.NotifySMS, To: "+8613800000008", Kind: quan.MessageIssued, Text: "您获得「新人券」"},
	}
	s, err := sms.New(sms.Config{URL: url, Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range s.Send(ctx, msgs) {
		if r.Outcome != quan.Sent {
			t.Errorf("message %d: %+v", i, r)
		}
	}
	// quan killed before it heard the answer sends the batch again, from
	// a sender of its own: the sink answers sent and prints nothing twice.
	again, err := sms.New(sms.Config{URL: url, Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range again.Send(ctx, msgs) {
		if r.Outcome != quan.Sent {
			t.Errorf("message %d sent again: %+v, want sent", i, r)
		}
	}
	wrong, err := sms.New(sms.Config{URL: url, Secret: "not-the-sink-secret!"})
	if err != nil {
		t.Fatal(err)
	}
	if r := wrong.Send(ctx, []quan.Outgoing{{ID: "task.1_9_sms", Channel: quan.NotifySMS, To: "+8613800000009", Text: "x"}}); r[0].Outcome != quan.RetryLater {
		t.Errorf("another secret: %+v, want retried", r[0])
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("sms-sink: %v", err)
	}
	want := "sms to=+8613800000007 id=task.1_7_sms template=quan_issued_zh text=\"您获得「新人券」\"\n" +
		"sms to=+8613800000008 id=task.1_8_sms template=quan_issued_zh text=\"您获得「新人券」\"\n"
	if stdout.String() != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", stdout.String(), want)
	}
	if !strings.Contains(stderr.String(), "--sms-url "+url) {
		t.Errorf("stderr does not tell the --sms-url: %s", stderr.String())
	}
	for _, line := range []string{
		"quan sms-sink: dropped 2 duplicate(s), printed before: task.1_7_sms, task.1_8_sms (2 in all)\n",
		"quan sms-sink: stopped: 2 messages printed, 2 duplicates dropped\n",
	} {
		if !strings.Contains(stderr.String(), line) {
			t.Errorf("stderr lacks %q:\n%s", line, stderr.String())
		}
	}

	err = (&SMSSinkCommand{Main: m}).Run(t.Context(), []string{"--addr", "127.0.0.1:0"})
	if err == nil || !strings.Contains(err.Error(), "--sms-secret") {
		t.Errorf("without a secret: %v", err)
	}
}
