package http_test

import (
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/notify"
)

// TestUnsubscribe: a mail's link shows a page that opts no one out; the
// RFC 8058 one-click POST opts the token's user out of email, keeping
// the rest of the contact, and again is no error; a forged, altered or
// missing token is 400 with a message that says so, and opts no one out.
func TestUnsubscribe(t *testing.T) {
	key := notify.UnsubscribeKey("0123456789abcdef0123456789abcdef")
	ts := newServer(t, func(ts *testServer) { ts.api.Notices.UnsubscribeKey = key })
	u := ts.user(t, 7)
	ts.do(t, "PUT", "/api/v1/me/contact", u, map[string]any{"mail": "li@example.com", "optOut": []string{"sms"}}).want(t, http.StatusOK, "")
	n := &quan.Notification{Source: "task:42", UserID: 7, Channel: quan.NotifyEmail}
	token := key.Token(n.MessageID())
	link := ts.URL + "/api/v1/unsubscribe?t=" + url.QueryEscape(token)

	send := func(method, link, body string) (int, string, string) {
		t.Helper()
		req, err := http.NewRequest(method, link, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		res, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header.Get("Content-Type"), string(b)
	}
	optOut := func() []quan.NotifyType {
		t.Helper()
		var c quan.Contact
		ts.do(t, "GET", "/api/v1/me/contact", u, nil).decode(t, &c)
		if c.Mail != "li@example.com" {
			t.Fatalf("the contact lost its mail: %+v", c)
		}
		return c.OptOut
	}

	status, ct, body := send("GET", link, "")
	if status != http.StatusOK || !strings.HasPrefix(ct, "text/html") || !strings.Contains(body, `method="post"`) || !strings.Contains(body, "One-Click") {
		t.Fatalf("GET the link: %d %s\n%s", status, ct, body)
	}
	if got := optOut(); !slices.Equal(got, []quan.NotifyType{quan.NotifySMS}) {
		t.Fatalf("a GET opted out: %v", got)
	}
	for range 2 {
		status, _, body = send("POST", link, "List-Unsubscribe=One-Click")
		if status != http.StatusOK || !strings.Contains(body, "Unsubscribed") {
			t.Fatalf("one-click POST: %d\n%s", status, body)
		}
	}
	if got := optOut(); !slices.Equal(got, []quan.NotifyType{quan.NotifyEmail, quan.NotifySMS}) {
		t.Fatalf("after the POST the user opts out of %v, want email and sms", got)
	}

	other := &quan.Notification{Source: "task:42", UserID: 8, Channel: quan.NotifyEmail}
	for name, tc := range map[string]struct{ token, want string }{
		"Missing":     {"", "missing or malformed"},
		"Forged":      {notify.UnsubscribeKey("another key, another signature!").Token(other.MessageID()), "signature does not match"},
		"OtherUser":   {other.MessageID() + token[strings.LastIndex(token, "."):], "signature does not match"},
		"CutShort":    {token[:len(token)-3], "signature does not match"},
		"NoSignature": {other.MessageID(), "signature does not match"},
	} {
		t.Run(name, func(t *testing.T) {
			for _, method := range []string{"GET", "POST"} {
				status, ct, body := send(method, ts.URL+"/api/v1/unsubscribe?t="+url.QueryEscape(tc.token), "")
				if status != http.StatusBadRequest || !strings.HasPrefix(ct, "text/plain") || !strings.Contains(body, tc.want) {
					t.Errorf("%s: %d %s %q, want 400 saying %q", method, status, ct, body, tc.want)
				}
			}
		})
	}
	var c quan.Contact
	admin := ts.token(t, quan.Identity{Role: quan.RoleAdmin, Subject: "ops"})
	ts.do(t, "GET", "/api/v1/users/8/contact", admin, nil).decode(t, &c)
	if len(c.OptOut) != 0 {
		t.Errorf("a refused token opted user 8 out of %v", c.OptOut)
	}
}
