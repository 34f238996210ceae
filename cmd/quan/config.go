package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// errUsage is returned after a usage message was printed.
var errUsage = errors.New("usage")

// envName is the environment variable that sets a flag: --jwt-secret is
// QUAN_JWT_SECRET.
func envName(flagName string) string {
	return "QUAN_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// parseFlags parses args into fs, after taking every flag not given on the
// command line from its QUAN_* environment variable.
func (m *Main) parseFlags(fs *flag.FlagSet, args []string) error {
	fs.SetOutput(m.Stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errUsage
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected arguments %q", fs.Name(), fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || m.Getenv == nil || err != nil {
			return
		}
		if v := m.Getenv(envName(f.Name)); v != "" {
			if e := f.Value.Set(v); e != nil {
				err = fmt.Errorf("%s=%q: %w", envName(f.Name), v, e)
			}
		}
	})
	return err
}

// newLogger returns a slog logger writing to w at level ("debug", "info",
// "warn", "error") in format ("text" or "json").
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log level %q: use debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("log format %q: use text or json", format)
}

// secretFile holds the token signing secret in the data folder.
const secretFile = "jwt-secret"

// loadSecret returns the token signing secret: explicit if given,
// otherwise the one kept in the data folder, generated on first use.
func loadSecret(dataDir, explicit string) ([]byte, error) {
	if explicit != "" {
		return []byte(explicit), nil
	}
	path := filepath.Join(dataDir, secretFile)
	b, err := os.ReadFile(path)
	if err == nil {
		s := strings.TrimSpace(string(b))
		if s == "" {
			return nil, fmt.Errorf("token secret file %s is empty: delete it to generate a new one", path)
		}
		return []byte(s), nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read token secret: %w", err)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data folder: %w", err)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("generate token secret: %w", err)
	}
	secret := hex.EncodeToString(raw)
	// O_EXCL: if two processes race to create it, one wins and the other
	// reads the winner's secret.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return loadSecret(dataDir, "")
	}
	if err != nil {
		return nil, fmt.Errorf("create token secret: %w", err)
	}
	if _, err := f.WriteString(secret + "\n"); err != nil {
		f.Close()
		return nil, fmt.Errorf("write token secret: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("write token secret: %w", err)
	}
	return []byte(secret), nil
}
