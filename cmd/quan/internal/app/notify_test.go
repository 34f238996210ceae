package app

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/notify"
)

// TestNotifyWiring: with --sms-url a server runs the dispatcher, which
// sends the queued SMS to the gateway; flags that cannot work are
// refused naming the flag.
func TestNotifyWiring(t *testing.T) {
	var (
		mu  sync.Mutex
		ids []string
		got = make(chan struct{}, 1)
	)
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Messages []struct{ ID string } }
		json.NewDecoder(r.Body).Decode(&req)
		var res []map[string]string
		mu.Lock()
		for _, m := range req.Messages {
			ids = append(ids, m.ID)
			res = append(res, map[string]string{"id": m.ID, "status": "sent"})
		}
		mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"results": res})
		select {
		case got <- struct{}{}:
		default:
		}
	}))
	defer gw.Close()

	noon := time.Date(2026, 3, 2, 4, 0, 0, 0, time.UTC) // 12:00 in Shanghai: not quiet
	cfg := Config{DataDir: t.TempDir(), Now: func() time.Time { return noon },
		Notify: Notify{SMSURL: gw.URL, SMSSecret: "0123456789abcdef"}}
	a, err := Open(context.Background(), cfg, Server, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if a.Dispatcher == nil || a.Notices == nil {
		t.Fatal("no dispatcher with --sms-url")
	}
	if _, err := a.Backends.Store.RecordNotifications(t.Context(), noon, []*quan.Notification{{Source: "task:1", UserID: 7,
		Channel: quan.NotifySMS, Address: "+8613800000007", Kind: quan.MessageIssued, Vars: quan.MessageVars{TemplateName: "券"}}}); err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("the gateway got nothing")
	}
	mu.Lock()
	if len(ids) != 1 || ids[0] != "task.1_7_sms" {
		t.Errorf("the gateway got %v", ids)
	}
	mu.Unlock()

	for _, tc := range []struct {
		n    Notify
		want string
	}{
		{Notify{SMTPURL: "smtp://127.0.0.1:25?from=a@example.com&tls=none"}, "--smtp-url needs --unsubscribe-url"},
		{Notify{SMSURL: gw.URL}, "--sms-url needs --sms-secret"},
		{Notify{QuietHours: "22-8"}, "--quiet-hours"},
		{Notify{QuietTZ: "Mars/Olympus"}, "--quiet-tz"},
	} {
		_, err := Open(context.Background(), Config{DataDir: t.TempDir(), Notify: tc.n}, Server, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%+v) = %v, want %q", tc.n, err, tc.want)
		}
	}
}

// TestUnsubscribeKeyShared: two processes on one store sign unsubscribe
// links with the same key, kept in the store, so a link one process's
// mail carries is good on the other's API.
func TestUnsubscribeKeyShared(t *testing.T) {
	dir := t.TempDir()
	var keys []notify.UnsubscribeKey
	for range 2 {
		a, err := Open(context.Background(), Config{DataDir: dir}, Server, nil)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, a.Notices.UnsubscribeKey)
		a.Close()
	}
	token := keys[0].Token("task.1_7_email")
	if user, ch, err := keys[1].Check(token); err != nil || user != 7 || ch != quan.NotifyEmail {
		t.Fatalf("a token of the first process checked on the second: %d %s %v", user, ch, err)
	}
	if len(keys[0]) != quan.SecretSize {
		t.Errorf("the key is %d bytes, want %d", len(keys[0]), quan.SecretSize)
	}
}
