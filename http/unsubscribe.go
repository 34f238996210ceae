package http

import (
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"

	"github.com/quanhq/quan"
)

// The unsubscribe page is for people following a mail's link, and for
// mail clients posting RFC 8058's one-click request: no token but the
// link's t, plain answers.
//
// GET only shows the page, with a button that posts: mail scanners and
// link previews fetch links, and a GET that opted users out would
// unsubscribe them without their asking (RFC 8058, section 4). A bad
// token is refused at once, on GET and POST alike.

// unsubscribePage asks to confirm: the form posts what a one-click
// client posts.
const unsubscribePage = `<!doctype html>
<html lang="zh"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>退订 / Unsubscribe</title></head>
<body style="font-family:sans-serif;max-width:32em;margin:3em auto">
<p>不再接收这类%[1]s？<br>Stop receiving these %[2]s?</p>
<form method="post" action="?t=%[3]s">
<input type="hidden" name="List-Unsubscribe" value="One-Click">
<button type="submit">退订 / Unsubscribe</button>
</form>
</body></html>
`

// unsubscribeDone is the answer to a post.
const unsubscribeDone = `<!doctype html>
<html lang="zh"><head><meta charset="utf-8"><title>已退订 / Unsubscribed</title></head>
<body style="font-family:sans-serif;max-width:32em;margin:3em auto">
<p>已退订：您将不再收到%[1]s。可在应用的通知设置中重新开启。<br>
You are unsubscribed: no more %[2]s. You can turn them back on in the app's notification settings.</p>
</body></html>
`

// channelWords names a channel on the pages, in Chinese and English.
func channelWords(ch quan.NotifyType) (zh, en string) {
	if ch == quan.NotifySMS {
		return "短信", "text messages"
	}
	return "邮件", "emails"
}

// unsubscribeForm is GET /api/v1/unsubscribe?t=TOKEN: checks the token
// and shows the page that confirms.
func (s *Server) unsubscribeForm(w http.ResponseWriter, r *http.Request) error {
	token := r.URL.Query().Get("t")
	_, ch, err := s.Notices.UnsubscribeKey.Check(token)
	if err != nil {
		return s.unsubscribeRefused(w, err)
	}
	zh, en := channelWords(ch)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	fmt.Fprintf(w, unsubscribePage, zh, en, html.EscapeString(url.QueryEscape(token)))
	return nil
}

// unsubscribe is POST /api/v1/unsubscribe?t=TOKEN, the one-click
// request (body List-Unsubscribe=One-Click) or the page's button: opts
// the user out and answers 200.
func (s *Server) unsubscribe(w http.ResponseWriter, r *http.Request) error {
	// The body says nothing the token does not; read it only so that a
	// client sending one gets it consumed, and bound it.
	io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, 4096))
	_, ch, err := s.Notices.Unsubscribe(r.Context(), r.URL.Query().Get("t"))
	if err != nil {
		return s.unsubscribeRefused(w, err)
	}
	zh, en := channelWords(ch)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	fmt.Fprintf(w, unsubscribeDone, zh, en)
	return nil
}

// unsubscribeRefused answers a bad token 400 in plain text, for the
// person who followed the link; other errors go the usual way.
func (s *Server) unsubscribeRefused(w http.ResponseWriter, err error) error {
	if quan.ErrorCode(err) != quan.EINVALID {
		return err
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusBadRequest)
	fmt.Fprintln(w, quan.ErrorMessage(err))
	return nil
}
