package mail_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"mime"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// server is a real SMTP server (emersion/go-smtp) on a loopback port.
// Recipients steer its answers: temp@ gets 451 at RCPT, perm@ gets 550,
// slow@ waits before answering DATA.
type server struct {
	addr     string
	user     string
	password string
	discard  bool // count mails without keeping them (benchmarks)

	mu    sync.Mutex
	mails []received
	count atomic.Int64
	conns atomic.Int64
}

type received struct {
	from string
	to   []string
	data []byte
}

func startServer(t testing.TB, user, password string, tlsConf *tls.Config) *server {
	t.Helper()
	return startServerWith(t, user, password, tlsConf, nil)
}

func startServerWith(t testing.TB, user, password string, tlsConf *tls.Config, tweak func(*smtp.Server)) *server {
	t.Helper()
	srv := &server{user: user, password: password}
	s := smtp.NewServer(srv)
	s.Domain = "localhost"
	s.AllowInsecureAuth = true
	s.TLSConfig = tlsConf
	s.MaxRecipients = 10
	s.ReadTimeout, s.WriteTimeout = 30*time.Second, 30*time.Second
	if tweak != nil {
		tweak(s)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.addr = l.Addr().String()
	go s.Serve(l)
	t.Cleanup(func() { s.Close() })
	return srv
}

func (srv *server) NewSession(c *smtp.Conn) (smtp.Session, error) {
	srv.conns.Add(1)
	return &session{srv: srv}, nil
}

func (srv *server) received() []received {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return append([]received(nil), srv.mails...)
}

type session struct {
	srv    *server
	authed bool
	from   string
	to     []string
}

func (s *session) AuthMechanisms() []string {
	if s.srv.user == "" {
		return nil
	}
	return []string{sasl.Plain}
}

func (s *session) Auth(mech string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(identity, user, password string) error {
		if user != s.srv.user || password != s.srv.password {
			return &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: "Authentication credentials invalid"}
		}
		s.authed = true
		return nil
	}), nil
}

func (s *session) Mail(from string, _ *smtp.MailOptions) error {
	if s.srv.user != "" && !s.authed {
		return &smtp.SMTPError{Code: 530, EnhancedCode: smtp.EnhancedCode{5, 7, 0}, Message: "Authentication required"}
	}
	s.from = from
	return nil
}

func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	switch {
	case strings.HasPrefix(to, "temp@"):
		return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "Mailbox busy, try again later"}
	case strings.HasPrefix(to, "perm@"):
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "No such user here"}
	}
	s.to = append(s.to, to)
	return nil
}

func (s *session) Data(r io.Reader) error {
	if s.srv.discard {
		if _, err := io.Copy(io.Discard, r); err != nil {
			return err
		}
		s.srv.count.Add(1)
		return nil
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if len(s.to) > 0 && strings.HasPrefix(s.to[0], "slow@") {
		time.Sleep(3 * time.Second)
	}
	s.srv.mu.Lock()
	s.srv.mails = append(s.srv.mails, received{from: s.from, to: s.to, data: b})
	s.srv.mu.Unlock()
	s.srv.count.Add(1)
	return nil
}

func (s *session) Reset()        { s.from, s.to = "", nil }
func (s *session) Logout() error { return nil }

// selfSigned returns a server TLS config for 127.0.0.1 and a client one
// that trusts it.
func selfSigned(t testing.TB) (server, client *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}},
		&tls.Config{RootCAs: pool}
}

var errNoHeader = errors.New("no such header")

// header returns the value of the named header in a raw mail.
func header(data []byte, name string) (string, error) {
	head, _, _ := bytes.Cut(data, []byte("\r\n\r\n"))
	for _, line := range strings.Split(string(head), "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, name) {
			return strings.TrimSpace(v), nil
		}
	}
	return "", errNoHeader
}

type mimeDecoder struct{}

func (mimeDecoder) decode(s string) (string, error) { return new(mime.WordDecoder).DecodeHeader(s) }
