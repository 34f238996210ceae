package quan

import (
	"context"
	"time"
)

// MessageKind is what a notification tells its recipient.
type MessageKind string

// Message kinds.
const (
	MessageIssued   MessageKind = "issued"   // a distribution issued the user a coupon
	MessageExpiring MessageKind = "expiring" // a coupon the user holds expires soon
	MessageOpening  MessageKind = "opening"  // a template the user asked to be reminded of opens for claims (预约)
)

// Lang is the language a message is written in. The zero value is Chinese.
type Lang string

// Languages.
const (
	LangZH Lang = "zh"
	LangEN Lang = "en"
)

// Outgoing is one notification to one recipient on one outside channel
// (email or SMS), ready to hand to a Sender. (Message is the bus's.)
type Outgoing struct {
	// ID is stable for the life of the notification: the dispatcher derives
	// it from (source, user, channel), and every retry sends the same ID, so
	// a provider that keeps IDs can drop the duplicates at-least-once
	// delivery may produce. It is short ASCII (letters, digits, '-', '_',
	// '.', at most 128 bytes): a mail's Message-ID and an HTTP header carry
	// it as is.
	ID      string
	UserID  int64
	Channel NotifyType  // NotifyEmail or NotifySMS
	To      string      // the address, normalised: see NormalizePhone and NormalizeMail
	Kind    MessageKind // picks the provider's template where the provider has its own (SMS)
	Lang    Lang
	Subject string // the rendered subject (email); empty for SMS
	Text    string // the rendered body, see Texts.Render
	// Params are the placeholders Text was rendered from, formatted for
	// people (MessageVars.Params): gateways that send their own approved
	// templates (Chinese SMS providers) fill them in.
	Params map[string]string
}

// SendOutcome is what became of one message handed to a Sender.
type SendOutcome string

// Send outcomes.
const (
	// Sent: the provider accepted the message. It may still bounce later;
	// quan does not track delivery receipts.
	Sent SendOutcome = "sent"
	// RetryLater: nothing is known to have reached the recipient and the
	// same message may succeed later (a 4xx SMTP reply, HTTP 429 or 5xx, a
	// timeout, a refused connection). The provider may have accepted it
	// anyway if the answer was lost: send it again with the same ID.
	RetryLater SendOutcome = "retry"
	// FailedForGood: the provider refused this message and would refuse it
	// again (an unknown mailbox, a malformed number). Do not retry.
	FailedForGood SendOutcome = "failed"
)

// SendResult is the outcome of one message.
type SendResult struct {
	Outcome SendOutcome
	// After is, for RetryLater, the soonest the provider asked to be tried
	// again (Retry-After); 0 leaves the wait to the dispatcher's backoff.
	After time.Duration
	// Reason says why, for RetryLater and FailedForGood, in the provider's
	// words where it gave any ("550 5.1.1 no such user"). It is for people
	// and the dead-letter report, not for switching on.
	Reason string
}

// Sender delivers messages through one outside channel (one adapter per
// channel: package mail for email, package sms for SMS).
//
// Delivery is at least once: a message whose result is RetryLater, or that
// was in a batch cut short by a crash, is sent again with the same ID, and
// only a provider that de-duplicates by ID can make that exactly once. The
// one window for a duplicate the provider cannot catch is between its
// acceptance and the dispatcher's record of Sent.
type Sender interface {
	// Send hands msgs to the provider, batching and reusing connections as
	// it can, and returns one result per message in the same order
	// (len(results) == len(msgs)). It never fails as a whole: a provider
	// that is down, a cancelled ctx or a timeout make every message it
	// touched RetryLater. It is safe for concurrent use.
	Send(ctx context.Context, msgs []Outgoing) []SendResult
}

// RetryAll returns n RetryLater results with the given reason, for a batch
// that could not be tried at all.
func RetryAll(n int, after time.Duration, reason string) []SendResult {
	out := make([]SendResult, n)
	for i := range out {
		out[i] = SendResult{Outcome: RetryLater, After: after, Reason: reason}
	}
	return out
}

// MaxOutgoingID is the longest Outgoing.ID.
const MaxOutgoingID = 128

// Validate reports whether o can be handed to a Sender: an ID of the
// allowed characters, an email or SMS channel, an address and a text.
// Senders answer FailedForGood to a message that is not valid.
func (o Outgoing) Validate() error {
	if o.ID == "" || len(o.ID) > MaxOutgoingID {
		return Errorf(EINVALID, "message id must be 1 to %d bytes", MaxOutgoingID)
	}
	for i := 0; i < len(o.ID); i++ {
		c := o.ID[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return Errorf(EINVALID, "message id %q has a character other than letters, digits, '-', '_' and '.'", o.ID)
		}
	}
	switch {
	case o.Channel != NotifyEmail && o.Channel != NotifySMS:
		return Errorf(EINVALID, "message %s: channel %q is not an outside channel", o.ID, o.Channel)
	case o.To == "":
		return Errorf(EINVALID, "message %s has no address", o.ID)
	case o.Text == "":
		return Errorf(EINVALID, "message %s has no text", o.ID)
	}
	return nil
}

// DispatchStats counts what a dispatcher did since it was made.
type DispatchStats struct {
	Sent     int64 `json:"sent"`
	Retried  int64 `json:"retried"`  // deferred after RetryLater
	Failed   int64 `json:"failed"`   // failed for good, or out of tries (opt-outs not included)
	OptedOut int64 `json:"optedOut"` // failed because the user opted out
	Quiet    int64 `json:"quiet"`    // deferred by quiet hours
	// PossibleDuplicates counts messages sent again after a dispatcher
	// took them and never recorded what became of them (it died or lost
	// its lease): the provider may have accepted the first sending. They
	// went with the same message id, for a provider that de-duplicates.
	PossibleDuplicates int64 `json:"possibleDuplicates"`
}
