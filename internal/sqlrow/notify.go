package sqlrow

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/quanhq/quan"
)

// NotificationColumns are the columns ScanNotification reads, in order.
var NotificationColumns = NotificationColumnsOf("")

// NotificationColumnsOf is NotificationColumns of the table p names
// ("n."), for a join.
func NotificationColumnsOf(p string) string {
	return strings.NewReplacer("$", p).Replace(`$id, $source, $user_id, coalesce($task_id, 0), $channel, $status, $reason, $address,
	$kind, $lang, $vars, $attempts, $next_at, $owner, $expires_at, $created_at, $updated_at`)
}

// ScanNotification reads a notification from a row of NotificationColumns,
// and the owner holding it ("" for none).
func ScanNotification(row Scanner) (*quan.Notification, string, error) {
	var (
		n     quan.Notification
		vars  string
		owner string
	)
	if err := row.Scan(&n.ID, &n.Source, &n.UserID, &n.TaskID, &n.Channel, &n.Status, &n.Reason, &n.Address,
		&n.Kind, &n.Lang, &vars, &n.Attempts, NullTime(&n.NextAt), &owner, NullTime(&n.ExpiresAt),
		Time(&n.CreatedAt), Time(&n.UpdatedAt)); err != nil {
		return nil, "", err
	}
	if err := json.Unmarshal([]byte(vars), &n.Vars); err != nil {
		return nil, "", fmt.Errorf("notification %d: vars: %w", n.ID, err)
	}
	return &n, owner, nil
}

// NotificationValues checks n, fills in its defaults at now (status,
// NextAt: due now for a message to send, NULL once final) and returns the
// values of its columns source … updated_at, as NotificationInsert lists
// them. at is how the store writes an instant.
func NotificationValues[V any](n *quan.Notification, now time.Time, at func(time.Time) V) ([]any, error) {
	if err := n.Validate(); err != nil {
		return nil, err
	}
	if n.Status == "" {
		n.Status = quan.NotificationQueued
		if n.Channel == quan.NotifyInbox || n.Channel == quan.NotifyPopup {
			n.Status = quan.NotificationSent
		}
	}
	if n.Status == quan.NotificationQueued {
		if n.NextAt.IsZero() {
			n.NextAt = now
		}
	} else {
		n.NextAt = time.Time{}
	}
	n.CreatedAt, n.UpdatedAt = now, now
	n.Reason = ClipReason(n.Reason)
	vars, err := json.Marshal(n.Vars)
	if err != nil {
		return nil, fmt.Errorf("notification %s: vars: %w", n.Source, err)
	}
	return []any{n.Source, n.UserID, NullInt64(n.TaskID), n.Channel, n.Status, n.Reason, n.Address,
		n.Kind, n.Lang, string(vars), Null(at, n.NextAt), Null(at, n.ExpiresAt), at(now), at(now)}, nil
}

// NotificationInsert is the column list of an INSERT of NotificationValues.
const NotificationInsert = `(source, user_id, task_id, channel, status, reason, address,
	kind, lang, vars, next_at, expires_at, created_at, updated_at)`

// NotificationParams is one row of parameters for NotificationInsert.
const NotificationParams = `(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// ResultGroup is results that one UPDATE records: the same status,
// reason, next try and given-back attempt.
type ResultGroup struct {
	Status   quan.NotificationStatus
	Reason   string
	NextAt   time.Time // zero for a final status
	GiveBack int       // 1 to undo the take's attempt
	IDs      []int64
}

// GroupResults groups rs by what they write, in a stable order.
func GroupResults(rs []quan.NotificationResult) []ResultGroup {
	var out []ResultGroup
	for _, r := range rs {
		g := ResultGroup{Status: r.Status, Reason: ClipReason(r.Reason)}
		if r.Status == quan.NotificationDeferred {
			g.NextAt = r.NextAt
		}
		if r.GiveBack {
			g.GiveBack = 1
		}
		i := slices.IndexFunc(out, func(o ResultGroup) bool {
			return o.Status == g.Status && o.Reason == g.Reason && o.NextAt.Equal(g.NextAt) && o.GiveBack == g.GiveBack
		})
		if i < 0 {
			out = append(out, g)
			i = len(out) - 1
		}
		out[i].IDs = append(out[i].IDs, r.ID)
	}
	return out
}

// CheckResults refuses results that do not end a take: a status other than
// sent, failed or deferred, or a deferral without a time.
func CheckResults(rs []quan.NotificationResult) error {
	for _, r := range rs {
		switch r.Status {
		case quan.NotificationSent, quan.NotificationFailed:
		case quan.NotificationDeferred:
			if r.NextAt.IsZero() {
				return quan.Errorf(quan.EINVALID, "notification %d deferred without a time", r.ID)
			}
		default:
			return quan.Errorf(quan.EINVALID, "notification %d finished as %q", r.ID, r.Status)
		}
	}
	return nil
}

// OptOutText is the stored form of a contact's opt-outs: a comma list.
func OptOutText(chs []quan.NotifyType) string {
	s := make([]string, len(chs))
	for i, c := range chs {
		s[i] = string(c)
	}
	return strings.Join(s, ",")
}

// ContactColumns are the columns ScanContact reads, in its order; both
// engines' contacts tables have them.
const ContactColumns = `user_id, phone, mail, lang, opt_out, updated_at`

// contactsBatch is how many users one query of ContactsOf names.
const contactsBatch = 1000

// ContactsOf reads the contacts of users through q (a store's read pool,
// or the transaction of a chunk), contactsBatch users a query along the
// primary key; a user with none on file is missing from the map.
func ContactsOf(ctx context.Context, q Queryer, users []int64) (map[int64]*quan.Contact, error) {
	out := make(map[int64]*quan.Contact)
	for start := 0; start < len(users); start += contactsBatch {
		part := users[start:min(start+contactsBatch, len(users))]
		cs, err := Query(ctx, q, "read contacts", ScanContact,
			`SELECT `+ContactColumns+` FROM contacts WHERE user_id IN (`+Params(len(part))+`)`, Args(nil, part)[1:]...)
		if err != nil {
			return nil, err
		}
		for _, c := range cs {
			out[c.UserID] = c
		}
	}
	return out, nil
}

// ScanContact reads a contact from a row of user_id, phone, mail, lang,
// opt_out, updated_at.
func ScanContact(row Scanner) (*quan.Contact, error) {
	var (
		c      quan.Contact
		optOut string
	)
	if err := row.Scan(&c.UserID, &c.Phone, &c.Mail, &c.Lang, &optOut, Time(&c.UpdatedAt)); err != nil {
		return nil, err
	}
	c.OptOut = []quan.NotifyType{}
	for _, s := range strings.Split(optOut, ",") {
		if s != "" {
			c.OptOut = append(c.OptOut, quan.NotifyType(s))
		}
	}
	return &c, nil
}

// EmptyContact is the contact of a user with none on file.
func EmptyContact(user int64) *quan.Contact {
	return &quan.Contact{UserID: user, Lang: quan.LangZH, OptOut: []quan.NotifyType{}}
}

// MaxReason is the most bytes of a reason the stores keep: a provider's
// answer can be long.
const MaxReason = 500

// ClipReason cuts r to MaxReason bytes, at a character boundary.
func ClipReason(r string) string {
	if len(r) <= MaxReason {
		return r
	}
	i := MaxReason
	for i > 0 && !utf8.RuneStart(r[i]) {
		i--
	}
	return r[:i]
}

// SplitByLang returns the contact import rows that set a language and
// those that do not: the stores write them in statements of their own,
// for a blank language keeps the stored one.
func SplitByLang(rows []quan.ContactRow) (withLang, noLang []quan.ContactRow) {
	for _, r := range rows {
		if r.Lang != "" {
			withLang = append(withLang, r)
		} else {
			noLang = append(noLang, r)
		}
	}
	return withLang, noLang
}
