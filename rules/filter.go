package rules

import (
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"

	"github.com/quanhq/quan"
)

// A rule's filter (quan.CompiledRule.Filter) is read off its checked
// syntax tree when it is compiled:
//
//   - Read: the user's facts the rule names (user.level, has(user.tags),
//     user.attrs.?city); the user as a whole anywhere else, or a macro
//     variable named user, reads them all.
//   - Where: one clause for each top-level conjunct (a && b && c) that is
//     a comparison of user.userId, .level or .orders with an integer
//     literal (either side), user.region == "literal", "literal" in
//     user.tags, user.level in [1, 2] or user.region in ["a", "b"], a
//     negation of one of these (but of region's equality), or an OR of
//     them. Any other conjunct adds no clause.
//   - Exact: every conjunct gave a clause, so the rule is the clauses.
//
// Why that is sound: none of those comparisons can fail on facts
// (integers, strings and tags are always present), so a user for whom one
// is false makes its conjunct false, and CEL's && is false when either
// side is false, whatever errors the other side meets. The rule is false
// for that user, and the scan may leave it out. A literal of another type
// (2.0, 2u) compares across types in CEL and is left to the rule.

// filterOf derives a rule's filter from its checked expression.
func filterOf(e ast.Expr) quan.FactsFilter {
	if shadowsUser(e) {
		return quan.FactsFilter{Read: quan.AllFacts}
	}
	f := quan.FactsFilter{Read: readsOf(e), Exact: true}
	for _, c := range flatten(e, operators.LogicalAnd) {
		clause, ok := clauseOf(c)
		if !ok {
			f.Exact = false
			continue
		}
		f.Where = append(f.Where, clause)
	}
	return f
}

// factOf maps a field of the user type to the fact it reads; userId is
// always read.
var factOf = map[string]quan.FactFields{
	"userId":       0,
	"level":        quan.FactLevel,
	"tags":         quan.FactTags,
	"registeredAt": quan.FactRegisteredAt,
	"region":       quan.FactRegion,
	"orders":       quan.FactOrders,
	"attrs":        quan.FactAttrs,
}

// readsOf is the facts e reads.
func readsOf(e ast.Expr) quan.FactFields {
	var read quan.FactFields
	switch e.Kind() {
	case ast.IdentKind:
		if e.AsIdent() == "user" {
			return quan.AllFacts
		}
	case ast.SelectKind:
		s := e.AsSelect()
		if isUser(s.Operand()) {
			f, ok := factOf[s.FieldName()]
			if !ok {
				return quan.AllFacts
			}
			return f
		}
		return readsOf(s.Operand())
	case ast.CallKind:
		c := e.AsCall()
		if c.IsMemberFunction() {
			read |= readsOf(c.Target())
		}
		for _, a := range c.Args() {
			read |= readsOf(a)
		}
	case ast.ListKind:
		for _, el := range e.AsList().Elements() {
			read |= readsOf(el)
		}
	case ast.MapKind:
		for _, en := range e.AsMap().Entries() {
			read |= readsOf(en.AsMapEntry().Key()) | readsOf(en.AsMapEntry().Value())
		}
	case ast.StructKind:
		for _, fl := range e.AsStruct().Fields() {
			read |= readsOf(fl.AsStructField().Value())
		}
	case ast.ComprehensionKind:
		c := e.AsComprehension()
		for _, x := range []ast.Expr{c.IterRange(), c.AccuInit(), c.LoopCondition(), c.LoopStep(), c.Result()} {
			read |= readsOf(x)
		}
	}
	return read
}

// shadowsUser reports whether a macro in e names a variable user, which
// would hide the rule's user inside it.
func shadowsUser(e ast.Expr) bool {
	found := false
	ast.PostOrderVisit(e, ast.NewExprVisitor(func(x ast.Expr) {
		if x.Kind() == ast.ComprehensionKind {
			c := x.AsComprehension()
			if c.IterVar() == "user" || c.IterVar2() == "user" || c.AccuVar() == "user" {
				found = true
			}
		}
	}))
	return found
}

func isUser(e ast.Expr) bool { return e.Kind() == ast.IdentKind && e.AsIdent() == "user" }

// flatten lists the operands of nested calls of the operator fn (a && b
// && c), or e alone.
func flatten(e ast.Expr, fn string) []ast.Expr {
	if e.Kind() != ast.CallKind || e.AsCall().FunctionName() != fn {
		return []ast.Expr{e}
	}
	var out []ast.Expr
	for _, a := range e.AsCall().Args() {
		out = append(out, flatten(a, fn)...)
	}
	return out
}

// clauseOf is the clause a conjunct states, if it is an OR of conditions.
func clauseOf(e ast.Expr) (quan.FactsClause, bool) {
	clause := quan.FactsClause{}
	for _, d := range flatten(e, operators.LogicalOr) {
		conds, ok := condsOf(d)
		if !ok {
			return nil, false
		}
		clause = append(clause, conds...)
	}
	return clause, true
}

// comparisons maps CEL's comparison operators to a FactCond's.
var comparisons = map[string]quan.FactOp{
	operators.Equals: quan.FactEq, operators.NotEquals: quan.FactNe,
	operators.Less: quan.FactLt, operators.LessEquals: quan.FactLe,
	operators.Greater: quan.FactGt, operators.GreaterEquals: quan.FactGe,
}

// flipped is the operator of a comparison with its sides swapped (2 < x
// is x > 2); negated, that of its negation (!(x < 2) is x >= 2).
var (
	flipped = map[quan.FactOp]quan.FactOp{quan.FactEq: quan.FactEq, quan.FactNe: quan.FactNe,
		quan.FactLt: quan.FactGt, quan.FactLe: quan.FactGe, quan.FactGt: quan.FactLt, quan.FactGe: quan.FactLe}
	negated = map[quan.FactOp]quan.FactOp{quan.FactEq: quan.FactNe, quan.FactNe: quan.FactEq,
		quan.FactLt: quan.FactGe, quan.FactLe: quan.FactGt, quan.FactGt: quan.FactLe, quan.FactGe: quan.FactLt,
		quan.FactHasTag: quan.FactLacksTag, quan.FactLacksTag: quan.FactHasTag}
)

// intFacts are the user's integer facts a condition may compare.
var intFacts = map[string]quan.FactFields{"userId": quan.FactUserID, "level": quan.FactLevel, "orders": quan.FactOrders}

// condsOf is the conditions, any of which e is true exactly when, if e is
// of a form the filter states (see the top of this file).
func condsOf(e ast.Expr) ([]quan.FactCond, bool) {
	if e.Kind() != ast.CallKind {
		return nil, false
	}
	c := e.AsCall()
	args := c.Args()
	switch fn := c.FunctionName(); {
	case fn == operators.LogicalNot:
		inner, ok := condsOf(args[0])
		if !ok || len(inner) != 1 || (inner[0].Field == quan.FactRegion) {
			return nil, false
		}
		inner[0].Op = negated[inner[0].Op]
		return inner, true
	case comparisons[fn] != 0:
		op := comparisons[fn]
		field, lit := userField(args[0]), args[1]
		if field == "" {
			field, lit, op = userField(args[1]), args[0], flipped[op]
		}
		if f, ok := intFacts[field]; ok {
			if n, ok := intLiteral(lit); ok {
				return []quan.FactCond{{Field: f, Op: op, Int: n}}, true
			}
		}
		if field == "region" && op == quan.FactEq {
			if s, ok := stringLiteral(lit); ok {
				return []quan.FactCond{{Field: quan.FactRegion, Op: quan.FactEq, Str: s}}, true
			}
		}
	case fn == operators.In:
		if s, ok := stringLiteral(args[0]); ok && userField(args[1]) == "tags" {
			return []quan.FactCond{{Field: quan.FactTags, Op: quan.FactHasTag, Str: s}}, true
		}
		return inList(userField(args[0]), args[1])
	}
	return nil, false
}

// inList is the conditions of user.<field> in [literals]: one equality
// for each (none for an empty list, which nobody is in).
func inList(field string, list ast.Expr) ([]quan.FactCond, bool) {
	_, isInt := intFacts[field]
	if (!isInt && field != "region") || list.Kind() != ast.ListKind || len(list.AsList().OptionalIndices()) > 0 {
		return nil, false
	}
	conds := []quan.FactCond{}
	for _, el := range list.AsList().Elements() {
		if isInt {
			n, ok := intLiteral(el)
			if !ok {
				return nil, false
			}
			conds = append(conds, quan.FactCond{Field: intFacts[field], Op: quan.FactEq, Int: n})
			continue
		}
		s, ok := stringLiteral(el)
		if !ok {
			return nil, false
		}
		conds = append(conds, quan.FactCond{Field: quan.FactRegion, Op: quan.FactEq, Str: s})
	}
	return conds, true
}

// userField is the name of the user's field e selects (user.level), or "".
func userField(e ast.Expr) string {
	if e.Kind() != ast.SelectKind || e.AsSelect().IsTestOnly() || !isUser(e.AsSelect().Operand()) {
		return ""
	}
	return e.AsSelect().FieldName()
}

func intLiteral(e ast.Expr) (int64, bool) {
	if e.Kind() != ast.LiteralKind {
		return 0, false
	}
	n, ok := e.AsLiteral().(types.Int)
	return int64(n), ok
}

func stringLiteral(e ast.Expr) (string, bool) {
	if e.Kind() != ast.LiteralKind {
		return "", false
	}
	s, ok := e.AsLiteral().(types.String)
	return string(s), ok
}
