package quan

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
	"slices"
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
	Reason     string      `json:"reason,omitempty"`   // failed: a code of ClaimReasons (DescribeClaimReason)
	At         time.Time   `json:"at"`                 // when it was accepted
	DecidedAt  time.Time   `json:"decidedAt,omitzero"`
	// TraceParent is the trace of the request that made the claim
	// (Tracer), carried with it to the store's transaction in the
	// ClaimTracesHeader of its batch; "" when not traced. Not stored.
	TraceParent string `json:"-"`
}

// claimIDEncoding writes the random part of claim ids.
var claimIDEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewClaimID returns a fresh claim id. It names the template and the user
// (so that a poll finds the cache's record without the store) and 80
// random bits: "c<template>-<user>-<random>".
func NewClaimID(template, user int64) string {
	var r [10]byte
	rand.Read(r[:])
	b := make([]byte, 0, 2*20+3+16)
	b = append(b, 'c')
	b = strconv.AppendInt(b, template, 10)
	b = append(b, '-')
	b = strconv.AppendInt(b, user, 10)
	b = append(b, '-')
	b = claimIDEncoding.AppendEncode(b, r[:])
	return string(b)
}

// KeyedClaimID returns the id of the claim of user for template under a
// client's Idempotency-Key: the same on every try, so that a retry finds
// the claim of its first try. Its last part is the key's SHA-256, cut to
// the 80 bits of NewClaimID's random part.
func KeyedClaimID(template, user int64, key string) string {
	sum := sha256.Sum256([]byte(key))
	b := make([]byte, 0, 2*20+3+16)
	b = append(b, 'c')
	b = strconv.AppendInt(b, template, 10)
	b = append(b, '-')
	b = strconv.AppendInt(b, user, 10)
	b = append(b, '-')
	b = claimIDEncoding.AppendEncode(b, sum[:10])
	return string(b)
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
	// FailClaim records c as failed with reason (a code of ClaimReasons)
	// at now, unless a record of c.ID exists; it returns the record. A
	// reason longer than MaxClaimReasonLen is an invalid error, and
	// records nothing.
	FailClaim(ctx context.Context, c *Claim, reason string, now time.Time) (*Claim, error)
	// Claim returns the record of claim id, or ErrNotFound.
	Claim(ctx context.Context, id string) (*Claim, error)
}

// UndecidedClaims sorts the claims[i], i in idx, of one batch for a store:
// out[i] becomes the record in recorded of a claim decided before, or a
// copy of the claim to decide, and the copies are returned in order, for
// PlanClaims. A claim twice among them is decided once: both places get
// the same copy. Every store calls it so a redelivered claim is treated
// alike.
func UndecidedClaims(claims []*Claim, idx []int, recorded map[string]*Claim, out []*Claim) []*Claim {
	var fresh []*Claim
	seen := map[string]*Claim{}
	for _, i := range idx {
		c := claims[i]
		if r := recorded[c.ID]; r != nil {
			out[i] = r
			continue
		}
		if d := seen[c.ID]; d != nil {
			out[i] = d
			continue
		}
		d := *c
		out[i] = &d
		seen[c.ID] = &d
		fresh = append(fresh, &d)
	}
	return fresh
}

// PlanClaims decides pending claims of template t in order, given held,
// the coupons each user holds (updated as claims issue), periods, what
// they received by Shanghai day and week (nil when t has no period
// limits; updated too: each claim counts in the day and week of its At),
// the stock, and now: it sets Status, Reason and DecidedAt, and returns
// for each issued claim the user's receive sequence (0 for failed ones).
// Every store calls it so the rules cannot drift.
func PlanClaims(claims []*Claim, t *Template, held map[int64]int64, periods *PeriodHeld, stock int64, now time.Time) []int64 {
	seqs := make([]int64, len(claims))
	for i, c := range claims {
		c.DecidedAt = now
		switch {
		case t.Status != TemplateActive || c.At.Before(t.IssueStart) || !c.At.Before(t.IssueEnd):
			c.Status, c.Reason = ClaimFailed, string(CauseTemplateInactive)
		case held[c.UserID] >= t.PerUserLimit:
			c.Status, c.Reason = ClaimFailed, string(CauseLimitReached)
		case t.PeriodRefusal(periods, c.UserID, c.At) != "":
			c.Status, c.Reason = ClaimFailed, string(t.PeriodRefusal(periods, c.UserID, c.At))
		case stock <= 0:
			c.Status, c.Reason = ClaimFailed, string(CauseOutOfStock)
		default:
			stock--
			held[c.UserID]++
			periods.Add(c.UserID, c.At)
			seqs[i] = held[c.UserID]
			c.Status, c.Reason = ClaimIssued, ""
		}
	}
	return seqs
}

// claimsMagic starts an encoded batch of claims and names its version. A
// message of one claim in JSON (what versions before it sent) starts with
// '{' instead.
const claimsMagic = "qcb1"

// claimStatuses numbers the statuses on the wire. The numbers are part of
// the wire format: append, never reorder.
var claimStatuses = []ClaimStatus{ClaimPending, ClaimIssued, ClaimFailed}

// Flags of a claim on the wire: its status code is in the low bits.
const (
	claimStatusBits  = 0x03
	claimHasCoupon   = 0x04
	claimHasReason   = 0x08
	claimHasDecided  = 0x10
	claimKnownFlags  = claimStatusBits | claimHasCoupon | claimHasReason | claimHasDecided
	claimMinWireSize = 5 // flags, id length, template, user, at
)

// EncodeClaims encodes a batch of claims for the bus in one message:
// varints, and text only for the id and a reason, so a pending claim takes
// about 45 bytes (JSON: about 130, and reflection to write and read it).
// Times keep microseconds and come back in UTC. A status other than
// pending, issued or failed is an invalid error.
func EncodeClaims(cs []*Claim) ([]byte, error) {
	b := make([]byte, 0, len(claimsMagic)+binary.MaxVarintLen64+len(cs)*48)
	b = append(b, claimsMagic...)
	b = binary.AppendUvarint(b, uint64(len(cs)))
	for _, c := range cs {
		code := slices.Index(claimStatuses, c.Status)
		if code < 0 {
			return nil, Errorf(EINVALID, "encode claims: claim %s has an unknown status %q", c.ID, c.Status)
		}
		flags := byte(code)
		if c.CouponID != 0 {
			flags |= claimHasCoupon
		}
		if c.Reason != "" {
			flags |= claimHasReason
		}
		if !c.DecidedAt.IsZero() {
			flags |= claimHasDecided
		}
		b = append(b, flags)
		b = binary.AppendUvarint(b, uint64(len(c.ID)))
		b = append(b, c.ID...)
		b = binary.AppendVarint(b, c.TemplateID)
		b = binary.AppendVarint(b, c.UserID)
		b = binary.AppendVarint(b, c.At.UnixMicro())
		if flags&claimHasCoupon != 0 {
			b = binary.AppendVarint(b, c.CouponID)
		}
		if flags&claimHasReason != 0 {
			b = binary.AppendUvarint(b, uint64(len(c.Reason)))
			b = append(b, c.Reason...)
		}
		if flags&claimHasDecided != 0 {
			b = binary.AppendVarint(b, c.DecidedAt.UnixMicro())
		}
	}
	return b, nil
}

// DecodeClaims decodes what EncodeClaims encoded. Anything else is an
// invalid error that says where it went wrong. It checks the encoding
// only: whether the claims make sense is the caller's business.
func DecodeClaims(b []byte) ([]*Claim, error) {
	if len(b) < len(claimsMagic) || string(b[:len(claimsMagic)]) != claimsMagic {
		return nil, Errorf(EINVALID, "decode claims: not a batch of claims of this version (want %q first)", claimsMagic)
	}
	d := wireDecoder{of: "claims", b: b, off: len(claimsMagic)}
	n := d.uvarint("claim count")
	if d.err == nil && n > uint64(len(b)-d.off)/claimMinWireSize {
		d.fail("claim count %d exceeds the message", n)
	}
	if d.err != nil {
		return nil, d.err
	}
	all := make([]Claim, n) // one allocation for the batch
	cs := make([]*Claim, n)
	for i := range all {
		c := &all[i]
		cs[i] = c
		flags := d.byte("flags")
		if d.err == nil && (flags&^claimKnownFlags != 0 || int(flags&claimStatusBits) >= len(claimStatuses)) {
			d.fail("claim %d has unknown flags %#x", i+1, flags)
		}
		c.ID = d.text("id")
		c.TemplateID = d.varint("template id")
		c.UserID = d.varint("user id")
		c.At = time.UnixMicro(d.varint("time")).UTC()
		if d.err != nil {
			return nil, d.err
		}
		c.Status = claimStatuses[flags&claimStatusBits]
		if flags&claimHasCoupon != 0 {
			if c.CouponID = d.varint("coupon id"); d.err == nil && c.CouponID == 0 {
				d.fail("claim %d has a coupon id of 0", i+1)
			}
		}
		if flags&claimHasReason != 0 {
			if c.Reason = d.text("reason"); d.err == nil && c.Reason == "" {
				d.fail("claim %d has an empty reason", i+1)
			}
		}
		if flags&claimHasDecided != 0 {
			c.DecidedAt = time.UnixMicro(d.varint("decision time")).UTC()
			if d.err == nil && c.DecidedAt.IsZero() {
				d.fail("claim %d has a zero decision time", i+1)
			}
		}
		if d.err != nil {
			return nil, d.err
		}
	}
	if d.off != len(b) {
		return nil, Errorf(EINVALID, "decode claims: %d bytes after the last claim", len(b)-d.off)
	}
	return cs, nil
}

// ClaimBatchSubject is the bus subject claims are handed to the store on,
// in batches (EncodeClaims). ClaimDurable is the consumer name the
// processes persisting claims share.
const (
	ClaimBatchSubject = "quan.claims.batch"
	ClaimDurable      = "quan-claims"
)

// Observer takes one measurement, such as a claim's duration in seconds
// (a prometheus.Observer is one).
type Observer interface{ Observe(float64) }

// MaxClaimsPerMessage bounds the claims one bus message carries (about
// 45 bytes each, far below a bus message's limit).
const MaxClaimsPerMessage = 500

// MaxClaimsPerTransaction bounds the claims the store decides in one
// transaction: the claims of the messages handled at once share it.
const MaxClaimsPerTransaction = 2000
