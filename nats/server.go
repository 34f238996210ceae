package nats

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Server is a NATS server with JetStream running inside this process, for
// a quan that runs on one machine without a NATS of its own. It listens on
// no port: buses reach it through an in-process connection (Bus).
type Server struct {
	srv    *server.Server
	logger *slog.Logger
	once   sync.Once
}

// StartEmbedded starts a server that keeps its JetStream data under dir,
// creating it if needed, and returns once the server accepts connections.
// A server started again on the same dir finds every stream, message and
// durable consumer it had. It installs no signal handler and opens no
// port. logger receives the server's notices, warnings and errors; nil
// discards them.
func StartEmbedded(ctx context.Context, dir string, logger *slog.Logger) (*Server, error) {
	return startServer(ctx, dir, logger, 0)
}

// StartListening starts a server like StartEmbedded that also listens on
// 127.0.0.1:port (-1: a free port), for other processes on the machine:
// a single-machine setup, or tests that restart a server under workers.
// ClientURL gives its address.
func StartListening(ctx context.Context, dir string, port int, logger *slog.Logger) (*Server, error) {
	if port == 0 {
		return nil, errors.New("start nats: port 0 listens nowhere; use StartEmbedded")
	}
	return startServer(ctx, dir, logger, port)
}

// ClientURL is the server's nats:// address, "" when it does not listen.
func (s *Server) ClientURL() string { return s.clientURL() }

// startServer starts a server on dir. port 0 listens nowhere; any other
// port (-1: a random one) listens on 127.0.0.1, which tests use to restart
// a server under a client that reconnects over TCP.
func startServer(ctx context.Context, dir string, logger *slog.Logger, port int) (*Server, error) {
	if dir == "" {
		return nil, errors.New("start nats: no store dir")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	opts := &server.Options{
		ServerName: "quan",
		JetStream:  true,
		StoreDir:   dir,
		NoSigs:     true,
		DontListen: port == 0,
		Host:       "127.0.0.1",
		Port:       port,
		// The HTTP monitor, cluster and leafnode ports stay closed: their
		// zero values mean "off".
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("start nats: %w", err)
	}
	srv.SetLoggerV2(serverLogger{logger}, false, false, false)
	srv.Start()

	wait := 10 * time.Second
	if d, ok := ctx.Deadline(); ok {
		wait = time.Until(d)
	}
	if !srv.ReadyForConnections(wait) {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, fmt.Errorf("start nats in %s: not ready after %s", dir, wait)
	}
	if !srv.JetStreamEnabled() {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, fmt.Errorf("start nats in %s: jetstream did not start", dir)
	}
	return &Server{srv: srv, logger: logger}, nil
}

// clientURL is the server's TCP address, "" when it does not listen.
func (s *Server) clientURL() string {
	if s.srv.Addr() == nil {
		return ""
	}
	return s.srv.ClientURL()
}

// Close shuts the server down and waits until it has stopped, flushing
// JetStream's files. Buses on it lose their connection. Safe to call twice.
func (s *Server) Close() {
	s.once.Do(func() {
		s.srv.Shutdown()
		s.srv.WaitForShutdown()
	})
}

// serverLogger passes the server's log lines to slog: its notices (the
// start-up banner among them) at debug, so that quan's own log stays
// quan's at info. The server's
// Fatalf does not exit here: a fatal start-up error shows as a server
// that never becomes ready, which StartEmbedded reports.
type serverLogger struct{ l *slog.Logger }

func (l serverLogger) Noticef(format string, v ...any) { l.l.Debug(fmt.Sprintf(format, v...)) }
func (l serverLogger) Warnf(format string, v ...any)   { l.l.Warn(fmt.Sprintf(format, v...)) }
func (l serverLogger) Fatalf(format string, v ...any)  { l.l.Error(fmt.Sprintf(format, v...)) }
func (l serverLogger) Errorf(format string, v ...any)  { l.l.Error(fmt.Sprintf(format, v...)) }
func (l serverLogger) Debugf(format string, v ...any)  { l.l.Debug(fmt.Sprintf(format, v...)) }
func (l serverLogger) Tracef(format string, v ...any)  { l.l.Debug(fmt.Sprintf(format, v...)) }
