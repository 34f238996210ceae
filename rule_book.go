package quan

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// DefaultRulesTTL is how long a RuleBook serves the rules it compiled when
// its TTL is 0: the longest a change of the rules made by another process
// goes unseen (a change made through this process's TemplateService is
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
	Engine    RuleEngine
	Templates TemplateStore
	Versions  RulesStore
	// TTL is how long an entry serves; 0 means DefaultRulesTTL.
	TTL    time.Duration
	Logger *slog.Logger

	mu     sync.RWMutex
	m      map[int64]*bookEntry
	gen    uint64 // counts Forget calls: a load that overlapped one is not kept
	flight flight
}

type bookEntry struct {
	rules *TemplateRules
	until time.Time
}

// TemplateRules are the compiled rules of one template, every version.
// A nil *TemplateRules has none.
type TemplateRules struct {
	TemplateID int64
	Status     TemplateStatus // when read
	versions   []compiledVersion
}

type compiledVersion struct {
	RulesVersion
	eligibility, applies CompiledRule // nil for none
}

// InForce returns the version in force at t (RulesVersion).
func (r *TemplateRules) InForce(t time.Time) int64 {
	if r == nil {
		return 0
	}
	v := 0
	for i := 1; i < len(r.versions); i++ {
		if !t.Before(r.versions[i].EffectiveAt) {
			v = i
		}
	}
	return int64(v)
}

// Eligibility returns the eligibility rule in force at now and its
// version; nil if that version has none.
func (r *TemplateRules) Eligibility(now time.Time) (CompiledRule, int64) {
	if r == nil {
		return nil, 0
	}
	v := r.InForce(now)
	return r.versions[v].eligibility, v
}

// Applies returns the applies rule that governs, at now, a coupon issued
// at issued, and its version: that of the version in force at issued,
// or of the latest version in force at now that applies to coupons
// issued before it (ApplyToIssued). nil if that version has none.
func (r *TemplateRules) Applies(issued, now time.Time) (CompiledRule, int64) {
	if r == nil {
		return nil, 0
	}
	v := r.InForce(issued)
	for i := v + 1; i < int64(len(r.versions)); i++ {
		w := &r.versions[i]
		if w.ApplyToIssued && !now.Before(w.EffectiveAt) {
			v = i
		}
	}
	return r.versions[v].applies, v
}

// hasApplies reports whether any version has an applies rule.
func (r *TemplateRules) hasApplies() bool {
	if r == nil {
		return false
	}
	for i := range r.versions {
		if r.versions[i].applies != nil {
			return true
		}
	}
	return false
}

func (b *RuleBook) ttl() time.Duration {
	if b.TTL <= 0 {
		return DefaultRulesTTL
	}
	return b.TTL
}

// cached returns the rules of template if the book holds them fresh.
func (b *RuleBook) cached(template int64) (*TemplateRules, bool) {
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
func (b *RuleBook) Rules(ctx context.Context, template int64) (*TemplateRules, error) {
	if r, ok := b.cached(template); ok {
		return r, nil
	}
	var (
		out *TemplateRules
		err error
	)
	// Concurrent misses share one load; each then reads the entry.
	ferr := b.flight.do(template, func() error {
		out, err = b.load(ctx, template)
		return err
	})
	if ferr != nil {
		return nil, ferr
	}
	if out != nil || err != nil {
		return out, err
	}
	if r, ok := b.cached(template); ok {
		return r, nil
	}
	return b.load(ctx, template)
}

func (b *RuleBook) load(ctx context.Context, template int64) (*TemplateRules, error) {
	b.mu.RLock()
	gen := b.gen
	b.mu.RUnlock()
	t, err := b.Templates.Template(ctx, AnyShop, template)
	if err != nil {
		return nil, err
	}
	var later []RulesVersion
	if b.Versions != nil {
		if later, err = b.Versions.RulesVersions(ctx, template); err != nil {
			return nil, fmt.Errorf("rules of template %d: %w", template, err)
		}
	}
	var r *TemplateRules
	if t.Eligibility != "" || t.Applies != "" || len(later) > 0 {
		r = &TemplateRules{TemplateID: template, Status: t.Status}
		all := append([]RulesVersion{{TemplateID: template, Eligibility: t.Eligibility, Applies: t.Applies}}, later...)
		for _, v := range all {
			r.versions = append(r.versions, compiledVersion{RulesVersion: v,
				eligibility: b.compile(template, v.Version, RuleEligibility, v.Eligibility),
				applies:     b.compile(template, v.Version, RuleApplies, v.Applies)})
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

func (b *RuleBook) compile(template, version int64, kind RuleKind, src string) CompiledRule {
	if src == "" {
		return nil
	}
	if b.Engine == nil {
		return brokenRule{src: src, err: Errorf(EINVALID, "rules are not enabled on this server")}
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

func (r brokenRule) Eval(*UserFacts, *OrderFacts, time.Time) (bool, error) { return false, r.err }

// Filter passes every user: the rule decides on none.
func (r brokenRule) Filter() FactsFilter { return FactsFilter{} }
