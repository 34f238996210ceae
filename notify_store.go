package quan

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// NotificationStatus is where a notification is on its way to its
// recipient.
type NotificationStatus string

// Notification statuses. Inbox and popup entries are Sent when recorded:
// being in the store is their delivery.
const (
	NotificationQueued   NotificationStatus = "queued"   // waiting for its first try
	NotificationDeferred NotificationStatus = "deferred" // tried and waiting for the next try (NextAt), or held back by quiet hours
	NotificationSent     NotificationStatus = "sent"     // the provider accepted it, or it is in the inbox
	NotificationFailed   NotificationStatus = "failed"   // dead: Reason says why; never tried again
)

// Reasons a notification failed without reaching a provider.
const (
	ReasonNoContact      = string(NoContact)
	ReasonInvalidContact = string(InvalidContact)
	ReasonOptedOut       = "opted_out"    // the user opted out of the channel before it was sent
	ReasonTooManyTries   = "max_attempts" // prefix of the reason of a message that ran out of tries
)

// Notification is one message owed to one user on one channel, recorded
// once under the key (Source, UserID, Channel).
//
// A broadcast is an inbox or popup entry with UserID 0 and a TaskID: every
// user holding a coupon the task issued sees it, so a distribution to a
// million users writes one row per channel, not a million. Read and ack
// marks are written only when a user reads or acks.
type Notification struct {
	ID int64 `json:"id"`
	// Source names what owes the message, in letters, digits, ':' and '-'
	// (1 to 64 bytes): "task:42", "expiring:coupon:9",
	// "opening:template:7".
	Source  string             `json:"source"`
	UserID  int64              `json:"userId"`           // 0: a broadcast (TaskID)
	TaskID  int64              `json:"taskId,omitempty"` // the task a broadcast is about; optional for others
	Channel NotifyType         `json:"channel"`
	Status  NotificationStatus `json:"status"`
	Reason  string             `json:"reason,omitempty"`  // failed or deferred: why
	Address string             `json:"address,omitempty"` // email and SMS: the normalised address; failed invalid_contact: as written
	Kind    MessageKind        `json:"kind"`
	Lang    Lang               `json:"lang,omitempty"`
	Vars    MessageVars        `json:"vars"`
	// Attempts counts the times the message was taken to be sent.
	Attempts int `json:"attempts"`
	// NextAt is when a queued or deferred message is due; while a
	// dispatcher holds it, the end of its lease.
	NextAt time.Time `json:"nextAt,omitzero"`
	// ExpiresAt, for a popup, is when it stops being shown if it never
	// was; zero never.
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	// Retaken is set by TakeNotifications on a message a dispatcher took
	// before and never finished (it died, or lost its lease): the provider
	// may have it already.
	Retaken bool `json:"-"`
}

// maxSource is the longest Notification.Source.
const maxSource = 64

// Validate reports whether n can be recorded.
func (n *Notification) Validate() error {
	if n.Source == "" || len(n.Source) > maxSource || strings.ContainsFunc(n.Source, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == ':' || r == '-')
	}) {
		return Errorf(EINVALID, "notification source %q: want 1 to %d letters, digits, ':' or '-'", n.Source, maxSource)
	}
	inApp := n.Channel == NotifyInbox || n.Channel == NotifyPopup
	switch {
	case !inApp && n.Channel != NotifyEmail && n.Channel != NotifySMS:
		return Errorf(EINVALID, "notification %s: unknown channel %q", n.Source, n.Channel)
	case n.UserID < 0 || n.UserID == 0 && (!inApp || n.TaskID <= 0):
		return Errorf(EINVALID, "notification %s: a user, or for an inbox or popup broadcast a task", n.Source)
	case n.Kind == "" || len(n.Kind) > 16 || len(n.Lang) > 8:
		return Errorf(EINVALID, "notification %s: a kind of 1 to 16 bytes and a language of at most 8", n.Source)
	case !inApp && n.Address == "" && n.Status != NotificationFailed:
		return Errorf(EINVALID, "notification %s to user %d: %s without an address must be recorded failed (no_contact)", n.Source, n.UserID, n.Channel)
	}
	switch n.Status {
	case "", NotificationQueued, NotificationFailed:
	case NotificationSent:
		if !inApp {
			return Errorf(EINVALID, "notification %s: an %s message is recorded queued", n.Source, n.Channel)
		}
	default:
		return Errorf(EINVALID, "notification %s: recorded as %q", n.Source, n.Status)
	}
	return nil
}

// MessageID is the stable Outgoing.ID of the notification: its key in
// the characters Outgoing allows. Source has no '.' or '_', so the ID is
// different for every key: "task:42", user 7, sms → "task.42_7_sms".
func (n *Notification) MessageID() string {
	return fmt.Sprintf("%s_%d_%s", strings.ReplaceAll(n.Source, ":", "."), n.UserID, n.Channel)
}

// NotificationResult is what became of one message a dispatcher took.
type NotificationResult struct {
	ID     int64
	Status NotificationStatus // sent, failed or deferred
	Reason string
	NextAt time.Time // deferred: when to try again
	// GiveBack undoes the take's attempt: nothing was handed to the
	// provider (quiet hours).
	GiveBack bool
}

// NotificationCount is how many notifications of a source are on one
// channel in one status.
type NotificationCount struct {
	Channel NotifyType         `json:"channel"`
	Status  NotificationStatus `json:"status"`
	Count   int64              `json:"count"`
}

// InboxEntry is an inbox message or popup as its user sees it: a
// notification and the user's mark.
type InboxEntry struct {
	Notification
	// MarkedAt is when the user read it (inbox) or it was shown (popup);
	// zero if not yet.
	MarkedAt time.Time
}

// InboxFilter selects a page of a user's inbox.
type InboxFilter struct {
	UserID int64
	Unread bool // only the messages not read
	Offset int
	Limit  int // 1 … MaxPageSize; 0 means DefaultPageSize
}

// Validate refuses an offset or a limit out of range (Validation.Page).
func (f InboxFilter) Validate() error {
	var v Validation
	v.Page(f.Offset, f.Limit)
	return v.Err("invalid inbox query")
}

// NotificationStore keeps the notifications owed and the users' inboxes.
//
// A source records what it owes in the same transaction as what causes
// it; an adapter gives its own sources a way to do so inside their
// transactions (see package sqlite and mysql: recordNotifications), and
// RecordNotifications for a source that has no transaction of its own.
type NotificationStore interface {
	// RecordNotifications stores ns, setting the ID, CreatedAt and
	// UpdatedAt (now) of the ones it inserts, and returns how many it
	// inserted. A key (Source, UserID, Channel) recorded before is left
	// as it was: recording is idempotent. A zero Status is queued for
	// email and SMS, sent for inbox and popup; a zero NextAt is now.
	// EINVALID if one fails Validate; then nothing is stored.
	RecordNotifications(ctx context.Context, now time.Time, ns []*Notification) (int, error)

	// Notification returns the notification of key, or ErrNotFound.
	Notification(ctx context.Context, source string, user int64, ch NotifyType) (*Notification, error)

	// NotificationCounts counts the notifications of source by channel and
	// status (a broadcast counts once).
	NotificationCounts(ctx context.Context, source string) ([]NotificationCount, error)

	// FailedNotifications returns up to limit failed notifications of
	// source on ch with an ID above afterID, in ID order: a page of a
	// task's failed notifications report.
	FailedNotifications(ctx context.Context, source string, ch NotifyType, afterID int64, limit int) ([]*Notification, error)

	// TakeNotifications gives owner up to limit queued or deferred
	// messages of ch whose NextAt has come, earliest first: their NextAt
	// becomes lease (so no other dispatcher takes them before it), their
	// Attempts one more, their owner owner. A message whose lease ran out
	// without FinishNotifications is due again, and comes back Retaken.
	// Two owners taking at once never get the same message.
	TakeNotifications(ctx context.Context, ch NotifyType, owner string, now, lease time.Time, limit int) ([]*Notification, error)

	// FinishNotifications records rs for the messages owner still holds
	// and returns how many it recorded: a message another owner took since
	// (owner's lease ran out) is left to it. A deferred result is due at
	// its NextAt.
	FinishNotifications(ctx context.Context, owner string, now time.Time, rs []NotificationResult) (int, error)

	// PendingNotifications counts, by channel, the email and SMS messages
	// waiting to be sent at now: queued or deferred whose NextAt has come,
	// and those a dispatcher holds (taken, not finished). Messages waiting
	// for a backoff or the end of quiet hours are not counted. Channels
	// with none may be missing.
	PendingNotifications(ctx context.Context, now time.Time) (map[NotifyType]int64, error)

	// Inbox returns a page of the inbox messages of f.UserID, newest
	// first — its own and the broadcasts of the tasks it holds a coupon
	// of — and the number of all that match.
	Inbox(ctx context.Context, f InboxFilter) ([]*InboxEntry, int, error)

	// UnreadCount is the number of inbox messages of user not read.
	UnreadCount(ctx context.Context, user int64) (int, error)

	// MarkRead marks the inbox messages ids of user read at now (all of
	// them if ids is nil) and returns how many it marked. Ids that are not
	// in the user's inbox, or read before, are passed over.
	MarkRead(ctx context.Context, user int64, ids []int64, now time.Time) (int, error)

	// Popups returns the popups of user not shown yet and not expired at
	// now, newest first, marking nothing.
	Popups(ctx context.Context, user int64, now time.Time) ([]*InboxEntry, error)

	// AckPopup marks popup id of user shown at now. ErrNotFound if the
	// user has no such popup; acking twice is no error.
	AckPopup(ctx context.Context, user, id int64, now time.Time) error

	// DeleteInApp deletes up to limit inbox and popup messages, and up to
	// limit of their marks, created before before, and returns how many
	// rows it deleted: the retention sweep calls it until it returns 0.
	DeleteInApp(ctx context.Context, before time.Time, limit int) (int, error)
}

// Contact is what a user has on file for notifications.
type Contact struct {
	UserID int64  `json:"userId"`
	Phone  string `json:"phone"` // E.164, or empty
	Mail   string `json:"mail"`  // normalised, or empty
	Lang   Lang   `json:"lang"`  // zh (default) or en
	// OptOut lists the channels the user does not want: email, sms,
	// popup. The inbox cannot be opted out of.
	OptOut    []NotifyType `json:"optOut"`
	UpdatedAt time.Time    `json:"updatedAt,omitzero"`
}

// Normalize checks c and puts its addresses in normal form. Errors are
// EINVALID naming the field (phone, mail, lang, optOut).
func (c *Contact) Normalize() error {
	var err error
	if c.Phone = strings.TrimSpace(c.Phone); c.Phone != "" {
		if c.Phone, err = NormalizePhone(c.Phone); err != nil {
			return err
		}
	}
	if c.Mail = strings.TrimSpace(c.Mail); c.Mail != "" {
		if c.Mail, err = NormalizeMail(c.Mail); err != nil {
			return err
		}
	}
	switch c.Lang {
	case "":
		c.Lang = LangZH
	case LangZH, LangEN:
	default:
		return &Error{Code: EINVALID, Message: "invalid contact", Fields: []FieldError{{Field: "lang", Message: "zh or en"}}}
	}
	out := []NotifyType{}
	for _, ch := range c.OptOut {
		switch ch {
		case NotifyEmail, NotifySMS, NotifyPopup:
		default:
			return &Error{Code: EINVALID, Message: "invalid contact", Fields: []FieldError{{Field: "optOut", Message: fmt.Sprintf("%q: only email, sms and popup can be opted out of", ch)}}}
		}
		if !slices.Contains(out, ch) {
			out = append(out, ch)
		}
	}
	slices.Sort(out)
	c.OptOut = out
	return nil
}

// OptedOut reports whether the user opted out of ch.
func (c *Contact) OptedOut(ch NotifyType) bool {
	return c != nil && ch != NotifyInbox && slices.Contains(c.OptOut, ch)
}

// ContactStore keeps users' contacts.
type ContactStore interface {
	// Contact returns the contact of user; a user with none on file gets
	// an empty Contact (Lang zh, OptOut empty), not an error.
	Contact(ctx context.Context, user int64) (*Contact, error)
	// Contacts returns the contacts on file of users, by user; users
	// without one are left out.
	Contacts(ctx context.Context, users []int64) (map[int64]*Contact, error)
	// UpdateContact loads the contact of user (empty if none) under a
	// lock, calls fn, and saves it with UpdatedAt now if fn returns nil.
	UpdateContact(ctx context.Context, user int64, now time.Time, fn func(*Contact) error) (*Contact, error)
	// ImportContacts stores rows in one transaction and returns how many
	// it stored (all of them, or none with an error). Each row's non-blank
	// phone, mail and language replace the user's; a blank one leaves
	// what is stored (a user with no contact on file gets one, zh if the
	// row has no language). Opt-outs are never touched, so an unsubscribe
	// racing an import stands. UpdatedAt becomes now. Rows are normalised
	// (see ContactRow) and name each user once: the caller's duty.
	ImportContacts(ctx context.Context, now time.Time, rows []ContactRow) (int, error)
}

// ContactRow is one user's contact from a contacts import: Phone in E.164
// (NormalizePhone), Mail normalised (NormalizeMail), Lang zh or en; any of
// them "" to leave the stored one as it is.
type ContactRow struct {
	UserID int64
	Phone  string
	Mail   string
	Lang   Lang
}

// SecretStore keeps secrets with the data, so that every process on one
// store signs and checks with the same key (the coupon code key is kept
// the same way, by the store itself).
type SecretStore interface {
	// Secret returns the secret named name: SecretSize random bytes made
	// by the first caller on the store and returned to every caller, in
	// every process, after. EINVALID for a name not 1 to 64 bytes.
	Secret(ctx context.Context, name string) ([]byte, error)
}

// SecretSize is the length of a SecretStore's secrets.
const SecretSize = 32

// SecretUnsubscribe names the key of the unsubscribe links of mails.
const SecretUnsubscribe = "unsubscribe"

// Notice is an inbox message or popup as the API shows it.
type Notice struct {
	ID        int64             `json:"id"`
	Channel   NotifyType        `json:"channel"`
	Kind      MessageKind       `json:"kind"`
	Subject   string            `json:"subject"`
	Text      string            `json:"text"`
	Params    map[string]string `json:"params"`
	TaskID    int64             `json:"taskId,omitempty"`
	CreatedAt time.Time         `json:"createdAt"`
	ExpiresAt time.Time         `json:"expiresAt,omitzero"`
	Read      bool              `json:"read"` // inbox: read; popup: shown
	ReadAt    time.Time         `json:"readAt,omitzero"`
}
