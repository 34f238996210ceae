package quan

import (
	"errors"
	"fmt"
	"time"
)

// Error codes are stable, machine-readable strings that clients may switch
// on. Exactly one function (in package http) maps them to HTTP statuses.
const (
	EINVALID      = "invalid"              // the request or entity breaks a rule; see Fields
	EUNAUTHORIZED = "unauthorized"         // no identity, or a bad one
	EFORBIDDEN    = "forbidden"            // the identity may not do this at all
	ENOTFOUND     = "not_found"            // no such thing, or not visible to the caller
	ECONFLICT     = "conflict"             // the thing exists already
	EINTERNAL     = "internal"             // a bug or an unreachable dependency
	ETRANSITION   = "illegal_transition"   // a state change not allowed from the current status
	ENOTDRAFT     = "template_not_draft"   // templates can only be edited while draft
	EOUTOFSTOCK   = "out_of_stock"         // the template has no stock left
	ESTOCKLIMIT   = "stock_limit"          // the stock would exceed MaxStock
	ELEASELOST    = "lease_lost"           // a task runner no longer holds its task
	ETOOLARGE     = "file_too_large"       // an upload is over its size limit
	ECACHECOLD    = "cache_cold"           // the cache lacks a template and must be primed
	ECHUNKAPPLIED = "chunk_applied"        // a distribution chunk was applied before
	EUNAVAILABLE  = "unavailable"          // a backend is down for now (Error.Backend names it); try again
	EIDEMMISMATCH = "idempotency_mismatch" // an Idempotency-Key reused for another request
	ERATELIMITED  = "rate_limited"         // too many requests; Retry-After says when to try again
	ENOTUSABLE    = "coupon_not_usable"    // a coupon cannot be used for the order, or not with the others
	EPRICECHANGED = "price_changed"        // the discount is not what the client expected: quote again
	ETOOSLOW      = "too_slow"             // a request body came slower than the server's minimum rate
	ENOSPACE      = "insufficient_storage" // the data folder has no room for what was to be written
	EREFUNDED     = "order_refunded"       // the order was refunded: it settles nothing more
)

// The backends an EUNAVAILABLE error names (Error.Backend): what quan runs
// on, each one port's adapter.
const (
	BackendStore = "store" // the database: SQLite or MySQL
	BackendCache = "cache" // the shared cache: Redis
	BackendBus   = "bus"   // the message bus: NATS
)

// UnavailableRetryAfter is the Retry-After of a backend that failed: long
// enough that clients retrying do not hammer a backend coming back, short
// enough that a failover is ridden out in a few tries.
const UnavailableRetryAfter = 2 * time.Second

// Refusals of a claim, a code's redemption or a reminder: each a 409 that
// says why the user cannot have the coupon now. The cache's refusals
// (Refusal) and a distribution's causes (Cause) name the same reasons.
const (
	ESOLDOUT      = "sold_out"             // the template's stock is gone
	ELIMIT        = "limit_reached"        // the user holds PerUserLimit coupons of the template
	EDAILYLIMIT   = "daily_limit_reached"  // the user received PerUserDaily coupons today
	EWEEKLYLIMIT  = "weekly_limit_reached" // the user received PerUserWeekly coupons this week
	ENOTSTARTED   = "not_started"          // the template does not issue yet
	EENDED        = "ended"                // the template issues no more
	EPAUSED       = "paused"               // the template is paused
	ENOTELIGIBLE  = "not_eligible"         // the template's eligibility rule refuses the user
	ESHOPDAILYCAP = "shop_daily_cap"       // the shop's claims today reached its DailyClaimCap
	ECODEUSED     = "code_used"            // the redemption code was redeemed by someone else
	EALREADYOPEN  = "already_open"         // the template issues already: claim it rather than ask to be reminded
)

// Error is quan's one error type: a machine code, a message a person
// understands, for EINVALID the problem of each field, for ERATELIMITED
// and EUNAVAILABLE how long to wait, and for EUNAVAILABLE the backend
// that failed.
type Error struct {
	Code    string
	Message string
	Fields  []FieldError
	// RetryAfter is the earliest the same request could succeed (0 if
	// unknown): http answers it as Retry-After.
	RetryAfter time.Duration
	// Backend is the backend an EUNAVAILABLE error found down
	// (BackendStore, BackendCache, BackendBus); "" for other codes.
	Backend string
}

// FieldError names one invalid field and what is wrong with it.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Error is the code and the message, without a package prefix: callers
// wrap it with their operation, and the binary adds its own name.
func (e *Error) Error() string {
	if len(e.Fields) == 0 {
		return fmt.Sprintf("%s: %s", e.Code, e.Message)
	}
	s := fmt.Sprintf("%s: %s:", e.Code, e.Message)
	for i, f := range e.Fields {
		if i > 0 {
			s += ";"
		}
		s += " " + f.Field + ": " + f.Message
	}
	return s
}

// Is reports whether target is an *Error with the same code, so that
// errors.Is(err, quan.ErrNotFound) holds for every not-found error whatever
// its message.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Sentinel errors, one per code, for use with errors.Is.
var (
	ErrInvalid      = &Error{Code: EINVALID, Message: "invalid input"}
	ErrUnauthorized = &Error{Code: EUNAUTHORIZED, Message: "authentication required"}
	ErrForbidden    = &Error{Code: EFORBIDDEN, Message: "forbidden"}
	ErrNotFound     = &Error{Code: ENOTFOUND, Message: "not found"}
	ErrConflict     = &Error{Code: ECONFLICT, Message: "already exists"}
	ErrTransition   = &Error{Code: ETRANSITION, Message: "illegal status transition"}
	ErrNotDraft     = &Error{Code: ENOTDRAFT, Message: "only a draft template can be edited"}
	ErrOutOfStock   = &Error{Code: EOUTOFSTOCK, Message: "out of stock"}
	ErrStockLimit   = &Error{Code: ESTOCKLIMIT, Message: "stock limit exceeded"}
	ErrLeaseLost    = &Error{Code: ELEASELOST, Message: "the task is no longer held by this runner"}
	ErrTooLarge     = &Error{Code: ETOOLARGE, Message: "too large"}
	ErrChunkApplied = &Error{Code: ECHUNKAPPLIED, Message: "the chunk was applied before"}
)

// ErrorCode returns the code of the *Error in err's chain, "" for nil and
// EINTERNAL for any other error.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the human message of the *Error in err's chain. Other
// errors may carry internal detail, so they get a generic message.
func ErrorMessage(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}

// ErrorRetryAfter returns the RetryAfter of the *Error in err's chain, 0
// for none.
func ErrorRetryAfter(err error) time.Duration {
	var e *Error
	if errors.As(err, &e) {
		return e.RetryAfter
	}
	return 0
}

// ErrorBackend returns the backend an EUNAVAILABLE error in err's chain
// names, "" for none.
func ErrorBackend(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Backend
	}
	return ""
}

// Unavailable returns the EUNAVAILABLE error of backend (BackendStore,
// BackendCache, BackendBus) failing with cause: a connection refused or
// lost, a time-out, a failover, a server out of connections or of disk, a
// closed client. Adapters return it for their driver's transport errors,
// so that every caller answers 503 with Retry-After instead of 500. cause
// stays in the chain, for logs and errors.Is, and out of the message,
// which clients see.
func Unavailable(backend string, cause error) error {
	e := &Error{Code: EUNAVAILABLE, Backend: backend, RetryAfter: UnavailableRetryAfter,
		Message: fmt.Sprintf("the %s is unavailable for now; try again shortly", backend)}
	if cause == nil {
		return e
	}
	return fmt.Errorf("%w: %w", e, cause)
}

// NoSpace returns the ENOSPACE error of a write of what that needed
// bytes (0 if unknown) on a disk with free bytes left (-1 if unknown):
// the data folder's disk is full. cause (ENOSPC) stays in the chain.
func NoSpace(what string, needed, free int64, cause error) error {
	msg := "no room in the data folder for " + what
	switch {
	case needed > 0 && free >= 0:
		msg += fmt.Sprintf(": it needs %d bytes and %d are free", needed, free)
	case needed > 0:
		msg += fmt.Sprintf(": it needs %d bytes", needed)
	case free >= 0:
		msg += fmt.Sprintf(": %d bytes are free", free)
	}
	e := &Error{Code: ENOSPACE, Message: msg}
	if cause == nil {
		return e
	}
	return fmt.Errorf("%w: %w", e, cause)
}

// ErrorFields returns the field errors of the *Error in err's chain.
func ErrorFields(err error) []FieldError {
	var e *Error
	if errors.As(err, &e) {
		return e.Fields
	}
	return nil
}
