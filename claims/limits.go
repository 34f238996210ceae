package claims

import (
	"fmt"
	"strconv"
	"time"

	"github.com/quanhq/quan"
)

// Limits are the token buckets of claims: Rate a second, up to Burst
// at once, per user and per template. A zero Rate sets no limit; a Burst
// below 1 is 1.
type Limits struct {
	UserRate      float64
	UserBurst     int
	TemplateRate  float64
	TemplateBurst int
}

// claimBuckets are the buckets a claim of template by user takes a token
// from, in all (none if no limit is set); isTemplate[i] tells the
// template's bucket from the user's. The keys are "claim:user:<id>" and
// "claim:template:<id>".
type claimBuckets struct {
	all        [2]quan.Bucket
	isTemplate [2]bool
	n          int
}

func (l Limits) buckets(user, template int64) claimBuckets {
	var b claimBuckets
	if l.UserRate > 0 {
		b.all[b.n] = quan.Bucket{Key: "claim:user:" + strconv.FormatInt(user, 10), Rate: l.UserRate, Burst: max(l.UserBurst, 1)}
		b.n++
	}
	if l.TemplateRate > 0 {
		b.all[b.n] = quan.Bucket{Key: "claim:template:" + strconv.FormatInt(template, 10), Rate: l.TemplateRate, Burst: max(l.TemplateBurst, 1)}
		b.isTemplate[b.n] = true
		b.n++
	}
	return b
}

func (b *claimBuckets) list() []quan.Bucket { return b.all[:b.n] }

// refusal is the ERATELIMITED error of a claim of template that bucket
// refused, nil for refused < 0: it names whose claims were too many and
// carries the wait.
func (b *claimBuckets) refusal(template int64, refused int, wait time.Duration) error {
	if refused < 0 {
		return nil
	}
	if refused >= b.n {
		return fmt.Errorf("rate limiter refused bucket %d of %d", refused, b.n)
	}
	what := "you sent too many claims"
	if b.isTemplate[refused] {
		what = fmt.Sprintf("template %d gets too many claims", template)
	}
	e := quan.Errorf(quan.ERATELIMITED, "%s: try again in %s", what, wait.Round(time.Millisecond))
	e.RetryAfter = wait
	return e
}
