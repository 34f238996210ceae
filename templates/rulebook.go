package templates

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/flight"
)

// DefaultRulesTTL is how long a RuleBook serves the rules it compiled when
// its TTL is 0: the longest a change of the rules made by another process
// goes unseen (a change made through this process's Service is
// seen at once). A change whose effective time is further ahead than this
// is in force everywhere when it says.
const DefaultRulesTTL = 10 * time.Second

// maxBookEntries bounds a RuleBook: it starts again when full.
const maxBookEntries = 10_000

// RuleBook keeps the compiled rules of templates, every version, for the
// hot paths: claims, distributions and quotes read a template's rules
// from memory and compile nothing per request. A template is read from
// the store (the template and its versions) the first time it is asked
// for and again once its entry is older than TTL; a template without
// rules costs one pointer comparison after that. A nil *RuleBook knows
// no rules.
type RuleBook struct {
	Engine    quan.RuleEngine
	Templates quan.TemplateStore
	Versions  quan.RulesStore
	// TTL is how long an entry serves; 0 means DefaultRulesTTL.
	TTL    time.Duration
	Logger *slog.Logger

	mu     sync.RWMutex
	m      map[int64]*bookEntry
	gen    uint64 // counts Forget calls: a load that overlapped one is not kept
	flight flight.Group
}

type bookEntry struct {
	rules *quan.TemplateRules
	until time.Time
}

func (b *RuleBook) ttl() time.Duration {
	if b.TTL <= 0 {
		return DefaultRulesTTL
	}
	return b.TTL
}

// Cached returns the rules of template if the book holds them fresh.
func (b *RuleBook) Cached(template int64) (*quan.TemplateRules, bool) {
	if b == nil {
		return nil, true
	}
	b.mu.RLock()
	e, ok := b.m[template]
	b.mu.RUnlock()
	if !ok || !time.Now().Before(e.until) {
		return nil, false
	}
	return e.rules, true
}

// Rules returns the compiled rules of template: nil if it has none.
// ErrNotFound if there is no such template. A rule stored that no longer
// compiles (the engine's limits were lowered) is kept as one that never
// decides, so it refuses rather than lets through, and is logged.
func (b *RuleBook) Rules(ctx context.Context, template int64) (*quan.TemplateRules, error) {
	if r, ok := b.Cached(template); ok {
		return r, nil
	}
	var (
		out *quan.TemplateRules
		err error
	)
	// Concurrent misses share one load; each then reads the entry.
	ferr := b.flight.Do(template, func() error {
		out, err = b.load(ctx, template)
		return err
	})
	if ferr != nil {
		return nil, ferr
	}
	if out != nil || err != nil {
		return out, err
	}
	if r, ok := b.Cached(template); ok {
		return r, nil
	}
	return b.load(ctx, template)
}

func (b *RuleBook) load(ctx context.Context, template int64) (*quan.TemplateRules, error) {
	b.mu.RLock()
	gen := b.gen
	b.mu.RUnlock()
	t, err := b.Templates.Template(ctx, quan.AnyShop, template)
	if err != nil {
		return nil, err
	}
	var later []quan.RulesVersion
	if b.Versions != nil {
		if later, err = b.Versions.RulesVersions(ctx, template); err != nil {
			return nil, fmt.Errorf("rules of template %d: %w", template, err)
		}
	}
	var r *quan.TemplateRules
	if t.Eligibility != "" || t.Applies != "" || len(later) > 0 {
		r = &quan.TemplateRules{TemplateID: template, Status: t.Status}
		all := append([]quan.RulesVersion{{TemplateID: template, Eligibility: t.Eligibility, Applies: t.Applies}}, later...)
		for _, v := range all {
			r.AddVersion(v, b.compile(template, v.Version, quan.RuleEligibility, v.Eligibility),
				b.compile(template, v.Version, quan.RuleApplies, v.Applies))
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if gen == b.gen {
		if b.m == nil || len(b.m) >= maxBookEntries {
			b.m = make(map[int64]*bookEntry)
		}
		b.m[template] = &bookEntry{rules: r, until: time.Now().Add(b.ttl())}
	}
	return r, nil
}

func (b *RuleBook) compile(template, version int64, kind quan.RuleKind, src string) quan.CompiledRule {
	if src == "" {
		return nil
	}
	if b.Engine == nil {
		return brokenRule{src: src, err: quan.Errorf(quan.EINVALID, "rules are not enabled on this server")}
	}
	r, err := b.Engine.Compile(kind, src)
	if err != nil {
		if b.Logger != nil {
			b.Logger.Error("a stored rule does not compile: it refuses everyone until changed",
				"template", template, "version", version, "kind", kind, "err", err)
		}
		return brokenRule{src: src, err: err}
	}
	return r
}

// Forget drops what the book holds of template, so that the next use reads
// it again. Safe on a nil book.
func (b *RuleBook) Forget(template int64) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.gen++
	delete(b.m, template)
}

// brokenRule is a stored rule that does not compile: it never decides.
type brokenRule struct {
	src string
	err error
}

func (r brokenRule) Source() string { return r.src }

func (r brokenRule) Eval(*quan.UserFacts, *quan.OrderFacts, time.Time) (bool, error) {
	return false, r.err
}

// Filter passes every user: the rule decides on none.
func (r brokenRule) Filter() quan.FactsFilter { return quan.FactsFilter{} }
