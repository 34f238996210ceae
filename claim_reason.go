package quan

// Why a claim failed in the store, besides the Causes PlanClaims decides:
// the claims the store never received. A claim's Reason is always a code
// (ClaimReasons lists them); DescribeClaimReason says it in words.
const (
	// ReasonAbandoned: the process that reserved the claim stopped before
	// it handed the claim to the bus, so its client never had a 202; the
	// reaper (claims.Service.Reap) failed it and gave its reservation back.
	ReasonAbandoned = "abandoned"
	// ReasonHandoffFailed: the bus ran out of deliveries of the claim's
	// batch to the store (a dead letter, whose error the process logs);
	// nothing was issued and its reservation was given back.
	ReasonHandoffFailed = "handoff_failed"
)

// MaxClaimReasonLen is the most bytes of a claim's Reason and of a code
// the claim statistics count (RefusalCount.Code, FailedDelta.Reason): the
// stores keep them in columns this wide (claims.reason,
// claim_refusals.code). ClaimStore.FailClaim refuses a longer reason.
const MaxClaimReasonLen = 64

// ClaimReasons returns every Reason a store records a failed claim with:
// the causes PlanClaims fails a claim for, then ReasonAbandoned and
// ReasonHandoffFailed.
func ClaimReasons() []string {
	return []string{string(CauseTemplateInactive), string(CauseLimitReached), string(CauseDailyLimit),
		string(CauseWeeklyLimit), string(CauseOutOfStock), ReasonAbandoned, ReasonHandoffFailed}
}

// DescribeClaimReason says what a failed claim's Reason means, in words
// its user understands. A reason it does not know (the free text of a
// record from before reasons were codes) comes back as it is.
func DescribeClaimReason(reason string) string {
	switch reason {
	case ReasonAbandoned:
		return "abandoned: the server stopped before it passed the claim on; no coupon was issued and the coupon it held was given back: claim again"
	case ReasonHandoffFailed:
		return "the claim could not be passed to the store: no coupon was issued and the coupon it held was given back: claim again"
	case string(CauseTemplateInactive), string(CauseLimitReached), string(CauseDailyLimit),
		string(CauseWeeklyLimit), string(CauseOutOfStock):
		return Cause(reason).Describe()
	}
	return reason
}
