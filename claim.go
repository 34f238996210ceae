package quan

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ClaimStatus is where a claim is: accepted and on its way to the store,
// or decided there.
type ClaimStatus string

// Claim statuses.
const (
	ClaimPending ClaimStatus = "pending" // reserved in the cache, handed to the bus
	ClaimIssued  ClaimStatus = "issued"  // the store holds its coupon
	ClaimFailed  ClaimStatus = "failed"  // no coupon: see Reason
)

// Claim is one user's request for a coupon of a template under flash-sale
// load: reserved at once in the cache, persisted by the store later.
type Claim struct {
	ID         string      `json:"id"`
	TemplateID int64       `json:"templateId"`
	UserID     int64       `json:"userId"`
	Status     ClaimStatus `json:"status"`
	CouponID   int64       `json:"couponId,omitempty"` // issued
	Reason     string      `json:"reason,omitempty"`   // failed: a cause code, or why the hand-off failed
	At         time.Time   `json:"at"`                 // when it was accepted
	DecidedAt  time.Time   `json:"decidedAt,omitzero"`
}

// claimIDEncoding writes the random part of claim ids.
var claimIDEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewClaimID returns a fresh claim id. It names the template and the user
// (so that a poll finds the cache's record without the store) and 80
// random bits: "c<template>-<user>-<random>".
func NewClaimID(template, user int64) string {
	var b [10]byte
	rand.Read(b[:])
	return fmt.Sprintf("c%d-%d-%s", template, user, claimIDEncoding.EncodeToString(b[:]))
}

// ParseClaimID returns the template and user a claim id names, or
// ErrNotFound for anything that is not a claim id.
func ParseClaimID(id string) (template, user int64, err error) {
	parts := strings.Split(strings.TrimPrefix(id, "c"), "-")
	if !strings.HasPrefix(id, "c") || len(parts) != 3 || len(parts[2]) != 16 {
		return 0, 0, Errorf(ENOTFOUND, "no claim %q", id)
	}
	template, err1 := strconv.ParseInt(parts[0], 10, 64)
	user, err2 := strconv.ParseInt(parts[1], 10, 64)
	if _, err3 := claimIDEncoding.DecodeString(parts[2]); err1 != nil || err2 != nil || err3 != nil || template <= 0 || user <= 0 {
		return 0, 0, Errorf(ENOTFOUND, "no claim %q", id)
	}
	return template, user, nil
}

// ClaimStore persists claims and the coupons they issue.
type ClaimStore interface {
	// IssueClaims decides pending claims in one transaction, in order:
	// each issues a coupon (Source FromClaim, valid from its At) if the
	// template issues at the claim's At and is active now, the user holds
	// fewer than the limit and stock is left; otherwise it fails with the
	// Cause as its Reason. A claim whose ID the store has recorded before
	// is not decided again: its record is returned. It returns the
	// claims as recorded, in the order given. The stock never falls below
	// zero and no user exceeds the limit, whatever the cache let through.
	IssueClaims(ctx context.Context, claims []*Claim, now time.Time) ([]*Claim, error)
	// FailClaim records c as failed with reason at now, unless a record of
	// c.ID exists; it returns the record.
	FailClaim(ctx context.Context, c *Claim, reason string, now time.Time) (*Claim, error)
	// Claim returns the record of claim id, or ErrNotFound.
	Claim(ctx context.Context, id string) (*Claim, error)
}

// PlanClaims decides pending claims of template t in order, given held,
// the coupons each user holds (updated as claims issue), the stock, and
// now: it sets Status, Reason and DecidedAt, and returns for each issued
// claim the user's receive sequence (0 for failed ones). Every store calls
// it so the rules cannot drift.
func PlanClaims(claims []*Claim, t *Template, held map[int64]int64, stock int64, now time.Time) []int64 {
	seqs := make([]int64, len(claims))
	for i, c := range claims {
		c.DecidedAt = now
		switch {
		case t.Status != TemplateActive || c.At.Before(t.IssueStart) || !c.At.Before(t.IssueEnd):
			c.Status, c.Reason = ClaimFailed, string(CauseTemplateInactive)
		case held[c.UserID] >= t.PerUserLimit:
			c.Status, c.Reason = ClaimFailed, string(CauseLimitReached)
		case stock <= 0:
			c.Status, c.Reason = ClaimFailed, string(CauseOutOfStock)
		default:
			stock--
			held[c.UserID]++
			seqs[i] = held[c.UserID]
			c.Status, c.Reason = ClaimIssued, ""
		}
	}
	return seqs
}
