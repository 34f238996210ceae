package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/quanhq/quan/mysql"
	"github.com/quanhq/quan/sqlite"
)

// localFlags are the flags of commands that work on the data folder
// directly rather than through a server.
type localFlags struct {
	DataDir  string
	StoreURL string
	LogLevel string
	Files    FileFlags
	Runner   RunnerFlags
}

func (l *localFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&l.DataDir, "data", "./quan-data", "data folder")
	fs.StringVar(&l.StoreURL, "store", "sqlite:", "store: sqlite:[PATH] (default PATH: DATA/quan.db) or mysql://USER[:PASS]@HOST[:PORT]/DB")
	fs.StringVar(&l.LogLevel, "log-level", "warn", "debug, info, warn or error")
	l.Files.register(fs)
	l.Runner.register(fs)
}

// open opens the store and wires the use cases; close releases them.
func (l *localFlags) open(ctx context.Context, m *Main) (*app, func(), error) {
	logger, err := newLogger(m.Stderr, l.LogLevel, "text")
	if err != nil {
		return nil, nil, err
	}
	if err := os.MkdirAll(l.DataDir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("create data folder: %w", err)
	}
	st, closeStore, err := openStore(ctx, l.StoreURL, l.DataDir, logger)
	if err != nil {
		return nil, nil, err
	}
	return m.wire(st.store, st.chunkSize, l.DataDir, l.Files, l.Runner, logger), closeStore, nil
}

// openedStore is a store and what suits it.
type openedStore struct {
	store
	chunkSize int // rows per transaction that the engine handles best
}

// openStore picks the store adapter by the scheme of its URL; this is the
// one place backends are chosen.
func openStore(ctx context.Context, url, dataDir string, logger *slog.Logger) (openedStore, func(), error) {
	scheme, rest, _ := strings.Cut(url, ":")
	switch scheme {
	case "sqlite":
		path := rest
		if path == "" {
			path = filepath.Join(dataDir, "quan.db")
		}
		db, err := sqlite.Open(ctx, path, logger)
		if err != nil {
			return openedStore{}, nil, fmt.Errorf("open sqlite store: %w", err)
		}
		return openedStore{sqlite.NewStore(db), sqlite.ChunkSize}, func() { db.Close() }, nil
	case "mysql":
		db, err := mysql.Open(ctx, url, logger)
		if err != nil {
			return openedStore{}, nil, fmt.Errorf("open mysql store: %w", err)
		}
		return openedStore{mysql.NewStore(db), mysql.ChunkSize}, func() { db.Close() }, nil
	}
	return openedStore{}, nil, fmt.Errorf("--store %q: unknown scheme %q (use sqlite: or mysql://)", url, scheme)
}

// parseFlagsArg parses flags and exactly one positional argument, which
// may stand before or after the flags.
func (m *Main) parseFlagsArg(fs *flag.FlagSet, args []string, what string) (string, error) {
	// Let the argument come first, as in "quan distribute users.xlsx --template 1".
	var pos []string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		pos, args = args[:1], args[1:]
	}
	fs.SetOutput(m.Stderr)
	if err := fs.Parse(args); err != nil {
		return "", errUsage
	}
	pos = append(pos, fs.Args()...)
	if len(pos) != 1 {
		return "", fmt.Errorf("%s: want one %s, got %d arguments", fs.Name(), what, len(pos))
	}
	if err := m.parseFlags(fs, nil); err != nil {
		return "", err
	}
	return pos[0], nil
}
