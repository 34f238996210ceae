package facts

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/userfile"
)

// Defaults of the facts cache (Service.Facts).
const (
	// DefaultCacheSize is the most users whose facts a process keeps
	// when Service.CacheSize is 0: about 20 MB of typical facts.
	DefaultCacheSize = 100_000
	// DefaultTTL is how long a process serves facts it read when
	// Service.CacheTTL is 0: the longest a change made by another
	// process goes unseen.
	DefaultTTL = 30 * time.Second
)

// Service keeps what quan knows of users (UserFacts) for
// eligibility rules and segments: admins put and import them, claims and
// quotes read them through Facts.
type Service struct {
	Store  quan.FactsStore
	Now    quan.Clock // nil is time.Now
	Logger *slog.Logger

	// Files keeps an uploaded attributes file while Import reads it, and
	// OpenRows reads it with every column (sheet.Options.Others); either
	// nil refuses imports.
	Files    quan.FileStore
	OpenRows func(path string) (quan.OthersReader, error)
	// MaxFileSize bounds an attributes file; 0 means DefaultMaxFileSize.
	MaxFileSize int64
	// MaxImportRows bounds an attributes file's data rows; 0 means
	// DefaultMaxRows.
	MaxImportRows int64

	// CacheSize bounds the users whose facts Facts keeps; 0 means
	// DefaultCacheSize, a negative size keeps none.
	CacheSize int
	// CacheTTL is how long Facts serves facts it has read; 0 means
	// DefaultTTL.
	CacheTTL time.Duration

	once   sync.Once
	cache  *factsCache
	loader *factsLoader // reads the misses, many a query
}

func (s *Service) facts() *factsCache {
	s.once.Do(func() {
		size, ttl := s.CacheSize, s.CacheTTL
		if size == 0 {
			size = DefaultCacheSize
		}
		if ttl <= 0 {
			ttl = DefaultTTL
		}
		s.cache = newFactsCache(size, ttl)
		s.loader = &factsLoader{read: s.Store.UserFacts}
	})
	return s.cache
}

// Put replaces the facts of facts.UserID with facts and returns them as
// stored (tags without repeats, the registration time in UTC). Only an
// admin may: an operator, or an upstream system holding an admin token
// (EFORBIDDEN otherwise). Invalid facts are EINVALID with a FieldError
// each (UserFacts.Validate).
func (s *Service) Put(ctx context.Context, who quan.Identity, facts quan.UserFacts) (*quan.UserFacts, error) {
	if err := CanChange(who); err != nil {
		return nil, err
	}
	f := facts
	f.Tags, f.Attrs = append([]string(nil), facts.Tags...), maps.Clone(facts.Attrs)
	f.Normalize()
	if err := f.Validate(); err != nil {
		return nil, err
	}
	if err := s.Store.PutUserFacts(ctx, s.Now.UTC(), []quan.UserFacts{f}); err != nil {
		return nil, err
	}
	s.facts().forget(f.UserID)
	return &f, nil
}

// Get returns the facts on file of user, read from the store (never the
// cache); a user of whom nothing is on file has zero facts. An admin may
// read any user's, a user its own (EFORBIDDEN otherwise).
func (s *Service) Get(ctx context.Context, who quan.Identity, user int64) (*quan.UserFacts, error) {
	switch {
	case who.Role == "":
		return nil, quan.ErrUnauthorized
	case who.Role == quan.RoleAdmin, who.Role == quan.RoleUser && who.UserID == user:
	default:
		return nil, quan.Errorf(quan.EFORBIDDEN, "only the user or an admin may see a user's attributes")
	}
	if user <= 0 {
		return nil, quan.Errorf(quan.ENOTFOUND, "no user %d", user)
	}
	return s.read(ctx, user)
}

// read reads the facts of user from the store, zero facts if none.
func (s *Service) read(ctx context.Context, user int64) (*quan.UserFacts, error) {
	m, err := s.Store.UserFacts(ctx, []int64{user})
	if err != nil {
		return nil, err
	}
	if f := m[user]; f != nil {
		return f, nil
	}
	return &quan.UserFacts{UserID: user, Tags: []string{}}, nil
}

// Facts returns the facts of user for the hot path (claims, quotes): from
// an in-process cache when it holds them, else from the store, which it
// then keeps for CacheTTL; concurrent misses share store reads
// (factsLoader). A user of whom nothing is on file is kept too,
// as zero facts with UserID set. The facts returned are shared: read them,
// never change them.
//
// Staleness: a Put or Import through this service forgets what the cache
// holds at once, so this process sees its own changes; a change made by
// another process (or straight in the store) is seen within CacheTTL. A
// store read that overlaps a Put or Import is used but not kept, so it
// cannot put back facts the change replaced.
func (s *Service) Facts(ctx context.Context, user int64) (*quan.UserFacts, error) {
	c, now := s.facts(), s.Now.UTC()
	if f, ok := c.get(user, now); ok {
		return f, nil
	}
	gen := c.generation()
	f, err := s.loader.load(ctx, user)
	if err != nil {
		return nil, fmt.Errorf("read the facts of user %d: %w", user, err)
	}
	c.put(f, now, gen)
	return f, nil
}

// Import replaces the facts of the users in the .xlsx or .csv file read
// from r, one row each: a user id column and any of level, tags
// (separated by | or ,), registeredAt (RFC 3339, or 2006-01-02 with an
// optional 15:04 or 15:04:05 in China time, or an Excel date), region and
// orders, named in any case (or 会员等级, 标签, 注册时间, 地区, 订单数);
// every other column is an attribute of its name (attrs). A blank cell is
// a fact unknown. Only an admin may (EFORBIDDEN otherwise).
//
// It reads, reports and stores like ImportContacts: a row fails, and the
// others go on, if its user id is not one (invalid_id), a fact is not
// valid (invalid_attribute, Field naming the column), or an earlier row
// has the same user (duplicate_in_file). A header that names a fact
// twice, repeats an attribute's name or has more than MaxUserAttrs
// attribute columns imports nothing (EINVALID naming "file"). Importing
// the same file again gives the same facts.
func (s *Service) Import(ctx context.Context, who quan.Identity, r io.Reader) (*quan.ImportReport, error) {
	if err := CanImport(who); err != nil {
		return nil, err
	}
	var open func(string) (quan.RowReader, func(quan.FileRow) (quan.UserFacts, int64, *quan.ImportFailure), error)
	if s.OpenRows != nil {
		open = func(path string) (quan.RowReader, func(quan.FileRow) (quan.UserFacts, int64, *quan.ImportFailure), error) {
			rows, err := s.OpenRows(path)
			if err != nil {
				return nil, nil, err
			}
			cols, err := newFactColumns(rows.Others())
			if err != nil {
				rows.Close()
				return nil, nil, err
			}
			return rows, cols.parse, nil
		}
	}
	maxRows := s.MaxImportRows
	if maxRows <= 0 {
		maxRows = DefaultMaxRows
	}
	now := s.Now.UTC()
	// Whatever is stored, and however it ends, the cache forgets it all.
	defer s.facts().forgetAll()
	return userfile.Import[quan.UserFacts]{
		What: "attributes", Files: s.Files, MaxSize: s.MaxFileSize, MaxRows: maxRows,
		Batch: ImportBatch, Reasons: attributeImportReasons, Open: open,
		Store: func(ctx context.Context, rows []quan.UserFacts) (int, error) {
			if err := s.Store.PutUserFacts(ctx, now, rows); err != nil {
				return 0, err
			}
			return len(rows), nil
		},
	}.Run(ctx, r)
}

// CanChange returns nil if who may put a user's attributes (an
// admin), else ErrUnauthorized or EFORBIDDEN: the API asks before it
// reads the body.
func CanChange(who quan.Identity) error {
	return quan.RequireAdmin(who, "change users' attributes")
}

// CanImport returns nil if who may import users' attributes (an
// admin), else ErrUnauthorized or EFORBIDDEN: the API asks before it
// reads the upload.
func CanImport(who quan.Identity) error {
	return quan.RequireAdmin(who, "import users' attributes")
}
