package bench

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/textproto"
	"sync"
	"time"

	"github.com/emersion/go-smtp"
)

// smtpSink is a real SMTP server (emersion/go-smtp) on a loopback port
// that accepts every mail and counts them by quan's message id (the
// X-Quan-Message-Id header): the local mail server of `bench notify`.
type smtpSink struct {
	srv  *smtp.Server
	Addr string
	ids  *idCounter
}

func startSMTPSink(ids *idCounter) (*smtpSink, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	k := &smtpSink{Addr: l.Addr().String(), ids: ids}
	k.srv = smtp.NewServer(k)
	k.srv.Domain = "localhost"
	k.srv.MaxRecipients = 10
	k.srv.ReadTimeout, k.srv.WriteTimeout = time.Minute, time.Minute
	go k.srv.Serve(l)
	return k, nil
}

func (k *smtpSink) Close() { k.srv.Close() }

// NewSession implements smtp.Backend.
func (k *smtpSink) NewSession(*smtp.Conn) (smtp.Session, error) { return &sinkSession{k: k}, nil }

type sinkSession struct{ k *smtpSink }

func (*sinkSession) Mail(string, *smtp.MailOptions) error { return nil }
func (*sinkSession) Rcpt(string, *smtp.RcptOptions) error { return nil }
func (*sinkSession) Reset()                               {}
func (*sinkSession) Logout() error                        { return nil }

// Data reads the header, counts the mail under its id, and drains the
// body.
func (s *sinkSession) Data(r io.Reader) error {
	br := bufio.NewReader(r)
	h, err := textproto.NewReader(br).ReadMIMEHeader()
	if err != nil {
		return err
	}
	if _, err := io.Copy(io.Discard, br); err != nil {
		return err
	}
	id := h.Get("X-Quan-Message-Id")
	if id == "" {
		return errors.New("no X-Quan-Message-Id")
	}
	s.k.ids.add(id)
	return nil
}

// idCounter counts the messages a local provider received, by id.
type idCounter struct {
	mu   sync.Mutex
	seen map[string]int
	n    int64
	last time.Time // when the latest arrived
}

func newIDCounter() *idCounter { return &idCounter{seen: map[string]int{}} }

func (c *idCounter) add(ids ...string) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		c.seen[id]++
	}
	c.n += int64(len(ids))
	c.last = now
}

// counts returns the messages received, the distinct ids among them, and
// when the latest arrived.
func (c *idCounter) counts() (received, distinct int64, last time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n, int64(len(c.seen)), c.last
}

// has reports how many times id was received.
func (c *idCounter) has(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen[id]
}
