package rules

import (
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/types"
)

// The sizes a rule is priced for when it is saved. CEL's estimator needs
// an upper bound on every list, map and string the rule reads, or any
// macro over a list would be priced infinite. On facts within them the
// estimate bounds an evaluation's cost; facts larger than these are still
// evaluated, under the runtime cost limit (Options.EvalCostLimit).
const (
	SizeTags       = 50  // user.tags
	SizeAttrs      = 50  // user.attrs entries
	SizeItems      = 100 // order.items
	SizeCategories = 100 // order.categories
	SizeString     = 64  // any string fact: region, a tag, an attrs value, a goods id, ...
)

// factSizes is the checker.CostEstimator that knows the sizes above; it
// leaves every call's cost to CEL's own estimates.
type factSizes struct{}

func (factSizes) EstimateSize(n checker.AstNode) *checker.SizeEstimate {
	path := n.Path()
	if len(path) < 2 || (path[0] != "user" && path[0] != "order") {
		return nil
	}
	var max uint64
	switch n.Type().Kind() {
	case types.StringKind:
		max = SizeString
	case types.ListKind:
		switch path[len(path)-1] {
		case "tags":
			max = SizeTags
		case "items":
			max = SizeItems
		case "categories":
			max = SizeCategories
		default:
			return nil
		}
	case types.MapKind:
		max = SizeAttrs
	default:
		return nil
	}
	return &checker.SizeEstimate{Min: 0, Max: max}
}

func (factSizes) EstimateCallCost(function, overloadID string, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
	return nil
}
