package quan

import "slices"

// A FactsFilter narrows a scan of users' facts (FactsStore.ScanUserFacts)
// to what a segment rule needs: the facts it reads, and conditions every
// user it can match meets. A rule gives its own (CompiledRule.Filter); the
// store turns it into SQL, so that a segment of a million users reads from
// the store only the users and the columns that can matter, and the rule
// still decides on each user that comes back. The zero value passes every
// user and reads only their ids.
type FactsFilter struct {
	// Read is the facts a scan fills in besides the user id; the others
	// are left at their zero value (Tags empty, never nil). 0 reads none.
	Read FactFields
	// Where are clauses every user the filter passes meets (AND); nil
	// passes everyone.
	Where []FactsClause
	// Exact says the rule is true of a user exactly when Where passes it
	// (the rule is nothing but those conditions): from a scan that states
	// Where exactly (FactsStore.ExactFilter), every user is matched
	// without evaluating the rule, and no fact need be read.
	Exact bool
}

// FactFields is a set of the facts of UserFacts.
type FactFields uint8

// The facts a filter reads or tests.
const (
	FactLevel FactFields = 1 << iota
	FactTags
	FactRegisteredAt
	FactRegion
	FactOrders
	FactAttrs
	FactUserID // always read; named only by a FactCond

	AllFacts = FactLevel | FactTags | FactRegisteredAt | FactRegion | FactOrders | FactAttrs
)

// A FactsClause is met when any of its conditions is (OR). An empty clause
// is never met.
type FactsClause []FactCond

// A FactCond compares one fact with a constant: an integer fact
// (FactUserID, FactLevel, FactOrders) with Int by any Op but the tag ones;
// FactRegion with Str by FactEq only (a store's collation may not order
// strings as quan does, and may pad them); FactTags by FactHasTag or
// FactLacksTag with the tag in Str.
type FactCond struct {
	Field FactFields // exactly one fact
	Op    FactOp
	Int   int64
	Str   string
}

// FactOp is how a FactCond compares.
type FactOp uint8

// The comparisons of a FactCond.
const (
	FactEq FactOp = iota + 1
	FactNe
	FactLt
	FactLe
	FactGt
	FactGe
	FactHasTag   // Str is one of the user's tags
	FactLacksTag // Str is none of them
)

// Only returns f with only the facts read names (the user id always),
// the others zero and Tags empty: what a scan that reads read returns of
// the user.
func (f UserFacts) Only(read FactFields) UserFacts {
	out := UserFacts{UserID: f.UserID, Tags: []string{}}
	if read&FactLevel != 0 {
		out.Level = f.Level
	}
	if read&FactTags != 0 {
		out.Tags = f.Tags
	}
	if read&FactRegisteredAt != 0 {
		out.RegisteredAt = f.RegisteredAt
	}
	if read&FactRegion != 0 {
		out.Region = f.Region
	}
	if read&FactOrders != 0 {
		out.Orders = f.Orders
	}
	if read&FactAttrs != 0 {
		out.Attrs = f.Attrs
	}
	return out
}

// Match reports whether f meets every clause of the filter: what a store's
// scan must keep. A store may return more users than Match passes (a
// condition its SQL cannot state exactly is left out) but never fewer.
func (ff FactsFilter) Match(f *UserFacts) bool {
	for _, c := range ff.Where {
		if !c.Match(f) {
			return false
		}
	}
	return true
}

// Match reports whether f meets any condition of c.
func (c FactsClause) Match(f *UserFacts) bool {
	return slices.ContainsFunc(c, func(fc FactCond) bool { return fc.Match(f) })
}

// Match reports whether f meets the condition; a condition not of the
// forms FactCond allows is not met.
func (fc FactCond) Match(f *UserFacts) bool {
	switch fc.Field {
	case FactUserID:
		return fc.Op.compare(f.UserID, fc.Int)
	case FactLevel:
		return fc.Op.compare(f.Level, fc.Int)
	case FactOrders:
		return fc.Op.compare(f.Orders, fc.Int)
	case FactRegion:
		return fc.Op == FactEq && f.Region == fc.Str
	case FactTags:
		switch fc.Op {
		case FactHasTag:
			return slices.Contains(f.Tags, fc.Str)
		case FactLacksTag:
			return !slices.Contains(f.Tags, fc.Str)
		}
	}
	return false
}

func (op FactOp) compare(a, b int64) bool {
	switch op {
	case FactEq:
		return a == b
	case FactNe:
		return a != b
	case FactLt:
		return a < b
	case FactLe:
		return a <= b
	case FactGt:
		return a > b
	case FactGe:
		return a >= b
	}
	return false
}
