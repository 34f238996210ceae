// Package rules is quan's rule language: merchant-written conditions in CEL
// (https://cel.dev) that decide who may get a coupon (eligibility), when a
// coupon can be used (applies) and which users a distribution targets
// (segment). It implements quan.RuleEngine; nothing else in quan imports
// CEL.
//
// # Variables
//
// Every rule sees
//
//	user    the user's facts (quan.UserFacts)
//	  .userId        int
//	  .level         int              member level, 0 = none
//	  .tags          list(string)
//	  .registeredAt  timestamp        1970-01-01T00:00:00Z if unknown
//	  .region        string
//	  .orders        int              orders so far; 0 = this is the first
//	  .attrs         map(string, string)  any other imported facts
//	now     timestamp                 the time of the claim, quote or run
//
// An applies rule sees the order as well:
//
//	order   (quan.OrderFacts)
//	  .shop          int
//	  .channel       string           e.g. "app", "mini", "web"
//	  .total         int              in fen (10000 = 100 yuan)
//	  .items         list of items, each with
//	                   .goodsId string, .categoryId string,
//	                   .price int (fen), .qty int
//	  .categories    list(string)
//	  .hour          int              0–23 in the engine's time zone (Asia/Shanghai by default)
//	  .at            timestamp        when the order is placed (now if unknown)
//
// A field name the type does not have, a variable the kind does not see
// (order in an eligibility rule) or an operand of the wrong type is refused
// when the rule is compiled, with its line and column.
//
// # Functions
//
// The CEL standard library: && || ! ?:, comparisons, + - * / %, size(),
// `in` (list membership, map key), has(), the macros exists, all,
// exists_one, map and filter, string contains, startsWith, endsWith and
// matches (RE2), int(), string(), timestamp(), duration() and the
// timestamp accessors (now.getDayOfWeek("Asia/Shanghai"), ...). The
// string extensions: lowerAscii, upperAscii, trim, split, join, replace,
// indexOf, substring, charAt, ... Optional access: user.attrs.?city
// .orValue("").
//
// # Examples
//
//	user.level >= 2 && "vip" in user.tags      members of level 2 or more tagged vip
//	user.orders == 0                           a first order
//	now - user.registeredAt < duration("720h") registered within 30 days
//	"city" in user.attrs && user.attrs["city"] == "shanghai"
//	order.total >= 10000 && order.channel == "app"
//	order.items.exists(i, i.categoryId == "books")
//	order.hour >= 18
//
// # Limits
//
// A rule must be true or false (a bool expression), at most
// Options.MaxLength bytes long, and CEL's estimate of its worst-case cost
// must not exceed Options.MaxCost; the estimate assumes facts no larger
// than the Size constants, so a macro over tags nested in a macro over
// tags is refused. Evaluation stops at Options.EvalCostLimit whatever the
// facts. Reading a missing attrs key is an evaluation error, not false:
// write `"k" in user.attrs && ...` or user.attrs.?k.orValue("").
package rules

import (
	"fmt"
	"strings"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"

	"github.com/quanhq/quan"
)

// Defaults of Options.
const (
	DefaultMaxCost   = 5000
	DefaultMaxLength = 4096
)

// Options configure an Engine; the zero value works.
type Options struct {
	// MaxCost is the highest worst-case cost, by CEL's estimate at
	// compile time, a rule may have (0 means DefaultMaxCost). One field
	// read or comparison costs about 1, a string operation about a tenth
	// of the string's length; a macro costs its body (and for map and
	// filter the growing result) times the size of the list. The default
	// admits one macro over order.items with a few operations inside
	// (about 2,000) and refuses a macro inside a macro over the same
	// facts (10,000 and more).
	MaxCost uint64
	// EvalCostLimit stops an evaluation that reaches this actual cost
	// (0 means 10 × MaxCost: room for facts larger than the sizes a rule
	// is priced for, never a runaway).
	EvalCostLimit uint64
	// MaxLength is the longest rule in bytes (0 means DefaultMaxLength).
	MaxLength int
	// Location is the time zone of order.hour (nil means Asia/Shanghai,
	// UTC+8, which has kept no daylight saving since 1991; a fixed zone
	// needs no tzdata on the host).
	Location *time.Location
}

// Validate reports options that contradict each other.
func (o Options) Validate() error {
	if o.MaxLength < 0 {
		return quan.Errorf(quan.EINVALID, "rules: max length %d: want 0 (the default) or more", o.MaxLength)
	}
	if o.EvalCostLimit != 0 && o.EvalCostLimit < o.maxCost() {
		return quan.Errorf(quan.EINVALID, "rules: eval cost limit %d is below the max cost %d a rule may be estimated at",
			o.EvalCostLimit, o.maxCost())
	}
	return nil
}

func (o Options) maxCost() uint64 {
	if o.MaxCost == 0 {
		return DefaultMaxCost
	}
	return o.MaxCost
}

// Engine compiles rules. It is safe for concurrent use.
type Engine struct {
	userEnv, orderEnv *cel.Env
	maxCost           uint64
	evalLimit         uint64
	maxLength         int
}

var _ quan.RuleEngine = (*Engine)(nil)

// New returns an Engine with opts, or an error if they are invalid.
func New(opts Options) (*Engine, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	e := &Engine{maxCost: opts.maxCost(), evalLimit: opts.EvalCostLimit, maxLength: opts.MaxLength}
	if e.evalLimit == 0 {
		e.evalLimit = 10 * e.maxCost
	}
	if e.maxLength == 0 {
		e.maxLength = DefaultMaxLength
	}
	loc := opts.Location
	if loc == nil {
		loc = time.FixedZone("Asia/Shanghai", 8*60*60)
	}
	var err error
	if e.userEnv, err = newEnv(loc, false, e.maxLength); err != nil {
		return nil, fmt.Errorf("rules: user environment: %w", err)
	}
	if e.orderEnv, err = newEnv(loc, true, e.maxLength); err != nil {
		return nil, fmt.Errorf("rules: order environment: %w", err)
	}
	return e, nil
}

func newEnv(loc *time.Location, withOrder bool, maxLength int) (*cel.Env, error) {
	opts := []cel.EnvOption{
		cel.Variable("user", userType),
		cel.Variable("now", cel.TimestampType),
		ext.Strings(),
		cel.OptionalTypes(),
		cel.ExtendedValidations(), // bad regexes, durations and timestamps in literals are refused at compile
		cel.ASTValidators(noFactLiterals{}),
		cel.ParserExpressionSizeLimit(maxLength),
	}
	if withOrder {
		opts = append(opts, cel.Variable("order", orderType))
	}
	// Last: libraries register their types (optional_type) in the
	// standard registry, which the fact types then wrap.
	opts = append(opts, newFactTypes(loc).option())
	return cel.NewEnv(opts...)
}

// noFactLiterals refuses quan.User{...} and the like: facts come from
// quan, a rule cannot make them up (the provider would refuse them at
// evaluation; this says so when the rule is saved).
type noFactLiterals struct{}

func (noFactLiterals) Name() string { return "quan.no_fact_literals" }

func (noFactLiterals) Validate(_ *cel.Env, _ cel.ValidatorConfig, a *ast.AST, iss *cel.Issues) {
	for _, e := range ast.MatchDescendants(ast.NavigateAST(a), ast.KindMatcher(ast.StructKind)) {
		iss.ReportErrorAtID(e.ID(), "%s cannot be created in a rule", e.AsStruct().TypeName())
	}
}

// Compile implements quan.RuleEngine.
func (e *Engine) Compile(kind quan.RuleKind, expr string) (quan.CompiledRule, error) {
	if !kind.Valid() {
		return nil, &quan.Error{Code: quan.EINVALID, Message: "invalid rule",
			Fields: []quan.FieldError{{Field: "kind", Message: fmt.Sprintf("%q is not eligibility, applies or segment", kind)}}}
	}
	if strings.TrimSpace(expr) == "" {
		return nil, invalid(kind, "the rule is empty")
	}
	if len(expr) > e.maxLength {
		return nil, invalid(kind, fmt.Sprintf("the rule is %d bytes long: at most %d", len(expr), e.maxLength))
	}
	env := e.userEnv
	if kind == quan.RuleApplies {
		env = e.orderEnv
	}
	checked, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, invalid(kind, issueMessage(kind, iss.Errors()))
	}
	if t := checked.OutputType(); !t.IsExactType(types.BoolType) {
		return nil, invalid(kind, fmt.Sprintf("the rule gives %s: it must give true or false (bool)", t))
	}
	est, err := env.EstimateCost(checked, factSizes{})
	if err != nil {
		return nil, invalid(kind, fmt.Sprintf("the rule's cost cannot be estimated: %v", err))
	}
	if est.Max > e.maxCost {
		return nil, invalid(kind, costMessage(est.Max, e.maxCost))
	}
	fast, err := env.Program(checked, cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, invalid(kind, err.Error())
	}
	guarded, err := env.Program(checked, cel.CostLimit(e.evalLimit), cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, invalid(kind, err.Error())
	}
	return &rule{kind: kind, src: expr, fast: fast, guarded: guarded, filter: filterOf(checked.NativeRep().Expr())}, nil
}

func costMessage(est, limit uint64) string {
	if est > 1e15 {
		return fmt.Sprintf("the rule's cost has no bound by estimate, the limit is %d: "+
			"compare fields, not whole users, orders or items", limit)
	}
	return fmt.Sprintf("the rule costs up to %d by estimate, the limit is %d: "+
		"a macro (exists, all, map, filter) inside another multiplies the cost", est, limit)
}

// issueMessage is the first few errors as "line:column: problem", without
// CEL's container note.
func issueMessage(kind quan.RuleKind, errs []*cel.Error) string {
	const most = 3
	var b strings.Builder
	for i, e := range errs {
		if i == most {
			fmt.Fprintf(&b, "; and %d more", len(errs)-most)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		msg := strings.TrimSuffix(e.Message, " (in container '')")
		if kind != quan.RuleApplies && msg == "undeclared reference to 'order'" {
			msg += fmt.Sprintf(" (the %s rule sees only user and now)", kind)
		}
		fmt.Fprintf(&b, "%d:%d: %s", e.Location.Line(), e.Location.Column()+1, msg)
	}
	return b.String()
}

func invalid(kind quan.RuleKind, msg string) *quan.Error {
	return &quan.Error{Code: quan.EINVALID, Message: "invalid rule",
		Fields: []quan.FieldError{{Field: string(kind), Message: msg}}}
}

// rule is a compiled rule; cel.Program is safe for concurrent use.
//
// It holds the program twice. On facts within the sizes the rule was
// priced for (the Size constants), the compile-time estimate already
// bounds the cost by MaxCost, so fast runs without CEL's runtime cost
// tracking, which would make it about four times slower. On larger facts
// guarded runs under cel.CostLimit(EvalCostLimit).
type rule struct {
	kind          quan.RuleKind
	src           string
	fast, guarded cel.Program
	filter        quan.FactsFilter // filterOf the rule; its Read also says which facts priced checks
}

func (r *rule) Source() string { return r.src }

// Filter implements quan.CompiledRule. The clauses are the rule's own:
// the caller must not change them.
func (r *rule) Filter() quan.FactsFilter { return r.filter }

// Eval implements quan.CompiledRule.
//
// A rule that is nothing but its filter's conditions (FactsFilter.Exact:
// user.level >= 2 && "vip" in user.tags, the typical eligibility rule)
// is decided by the filter's Match, in Go, without CEL: the same answer
// (TestFilterSound), at a fraction of the cost on the claim's hot path.
func (r *rule) Eval(user *quan.UserFacts, order *quan.OrderFacts, now time.Time) (bool, error) {
	if user == nil {
		user = &quan.UserFacts{}
	}
	if r.filter.Exact && r.kind != quan.RuleApplies {
		return r.filter.Match(user), nil
	}
	return r.evalCEL(user, order, now)
}

// evalCEL is Eval by the CEL program, user not nil.
func (r *rule) evalCEL(user *quan.UserFacts, order *quan.OrderFacts, now time.Time) (bool, error) {
	act := &activation{user: user, now: now}
	if r.kind == quan.RuleApplies {
		if order == nil {
			return false, &quan.Error{Code: quan.EINVALID, Message: "the rule cannot decide",
				Fields: []quan.FieldError{{Field: string(r.kind), Message: "an applies rule needs the order"}}}
		}
		act.order = orderVal{o: order, now: now}
	}
	prg := r.fast
	if !priced(r.filter.Read, user, act.order.o) {
		prg = r.guarded
	}
	out, _, err := prg.Eval(act)
	if err != nil {
		return false, &quan.Error{Code: quan.EINVALID, Message: "the rule cannot decide on these facts",
			Fields: []quan.FieldError{{Field: string(r.kind), Message: err.Error()}}}
	}
	b, ok := out.(types.Bool)
	if !ok { // the checker makes this unreachable
		return false, fmt.Errorf("rules: %s rule gave %T, not bool", r.kind, out)
	}
	return bool(b), nil
}

// priced reports whether the facts a rule reads (read) are within the
// sizes rules are priced for: the size of a fact the rule never reads
// cannot change its cost. Strings are measured in bytes, never fewer than
// CEL's code points.
func priced(read quan.FactFields, u *quan.UserFacts, o *quan.OrderFacts) bool {
	if read&quan.FactTags != 0 && (len(u.Tags) > SizeTags || !shortStrings(u.Tags)) {
		return false
	}
	if read&quan.FactRegion != 0 && len(u.Region) > SizeString {
		return false
	}
	if read&quan.FactAttrs != 0 {
		if len(u.Attrs) > SizeAttrs {
			return false
		}
		for k, v := range u.Attrs {
			if len(k) > SizeString || len(v) > SizeString {
				return false
			}
		}
	}
	if o == nil {
		return true
	}
	if len(o.Items) > SizeItems || len(o.Categories) > SizeCategories || len(o.Channel) > SizeString ||
		!shortStrings(o.Categories) {
		return false
	}
	for i := range o.Items {
		if len(o.Items[i].GoodsID) > SizeString || len(o.Items[i].CategoryID) > SizeString {
			return false
		}
	}
	return true
}

func shortStrings(ss []string) bool {
	for _, s := range ss {
		if len(s) > SizeString {
			return false
		}
	}
	return true
}
