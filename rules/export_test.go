package rules

import (
	"time"

	"github.com/quanhq/quan"
)

// EvalCEL decides r by its CEL program even where Eval would not (an
// exact rule): what the tests hold Eval's shortcut to.
func EvalCEL(r quan.CompiledRule, user *quan.UserFacts, now time.Time) (bool, error) {
	return r.(*rule).evalCEL(user, nil, now)
}
