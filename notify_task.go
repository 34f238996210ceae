package quan

import (
	"context"
	"io"
	"iter"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// TaskSource is the Notification.Source of the messages task id owes:
// "task:42".
func TaskSource(id int64) string { return "task:" + strconv.FormatInt(id, 10) }

// IssuedVars fill the message that tells a user of a coupon of t
// received at received.
func IssuedVars(t *Template, received time.Time) MessageVars {
	_, end := t.CouponWindow(received)
	return MessageVars{TemplateName: t.Name, AmountOff: t.Rule.Amount, Threshold: t.Rule.Threshold,
		Rate: t.Rule.Rate, ValidUntil: end}
}

// NeedsContacts reports whether chs send to addresses (email, SMS): then
// the chunks carry the rows' phone and mail, and the store looks up the
// contacts on file of the users a chunk issued to.
func NeedsContacts(chs []NotifyType) bool {
	return slices.Contains(chs, NotifyEmail) || slices.Contains(chs, NotifySMS)
}

// IssuedUsers returns the users of the rows of a planned chunk that got a
// coupon, in row order. A dry run issues nothing: do not ask.
func IssuedUsers(c *Chunk) []int64 {
	var out []int64
	for _, r := range c.Rows {
		if r.Cause == "" {
			out = append(out, r.UserID)
		}
	}
	return out
}

// ChunkNotifications returns what a chunk of a task that notifies on chs
// owes once it issued its coupons of t: the store records them in the
// chunk's transaction (see NotificationStore), so they are owed exactly
// when the coupons exist. c is planned (the rows that got a coupon have no
// Cause) and not a dry run; contacts are the contacts on file of the users
// it issued to (missing ones have none).
//
//   - Inbox and popup: one broadcast per channel for the whole task
//     (UserID 0, TaskID): every chunk returns it and the store keeps the
//     first, so a million users cost one row. A popup is shown until the
//     coupons' valid end at the latest.
//   - Email and SMS: one message per issued row, to the address
//     PickContact takes from the row's column, else the contact on file.
//     A row without a usable one is recorded failed, no_contact or
//     invalid_contact; the coupon is issued either way.
//
// Rows that got no coupon owe nothing; a chunk that issued nothing owes
// nothing, not even a broadcast. Every message is due at c.Now: a task
// runs only once its SendAt has come (ClaimTask), so the chunk's time is
// never before it, and a message is not held back further (quiet hours
// are the dispatcher's).
func ChunkNotifications(c *Chunk, chs []NotifyType, t *Template, contacts map[int64]*Contact) []*Notification {
	issued := 0
	for _, r := range c.Rows {
		if r.Cause == "" {
			issued++
		}
	}
	if issued == 0 || len(chs) == 0 {
		return nil
	}
	src := TaskSource(c.TaskID)
	vars := IssuedVars(t, c.Now)
	size := 0
	for _, ch := range chs {
		if ch == NotifyEmail || ch == NotifySMS {
			size += issued
		} else {
			size++
		}
	}
	// One allocation for all of them: an SMS task's chunk of 50,000 rows
	// owes 50,000 messages.
	all := make([]Notification, 0, size)
	out := make([]*Notification, 0, size)
	add := func(n Notification) {
		all = append(all, n)
		out = append(out, &all[len(all)-1])
	}
	for _, ch := range chs {
		switch ch {
		case NotifyInbox, NotifyPopup:
			n := Notification{Source: src, TaskID: c.TaskID, Channel: ch, Kind: MessageIssued, Vars: vars}
			if ch == NotifyPopup {
				n.ExpiresAt = vars.ValidUntil
			}
			add(n)
		case NotifyEmail, NotifySMS:
			for _, r := range c.Rows {
				if r.Cause != "" {
					continue
				}
				n := Notification{Source: src, UserID: r.UserID, TaskID: c.TaskID, Channel: ch, Kind: MessageIssued, Vars: vars}
				k := r.contact()
				row, onFile := k.Mail, ""
				if ch == NotifySMS {
					row = k.Phone
				}
				if k := contacts[r.UserID]; k != nil {
					n.Lang = k.Lang
					onFile = k.Mail
					if ch == NotifySMS {
						onFile = k.Phone
					}
				}
				addr, problem := PickContact(ch, row, onFile)
				switch problem {
				case InvalidContact:
					// The address as written, for the failed
					// notifications' report: what the merchant must fix.
					addr = row
					if strings.TrimSpace(row) == "" {
						addr = onFile
					}
					fallthrough
				case NoContact:
					n.Status, n.Reason = NotificationFailed, string(problem)
				}
				n.Address = addr
				add(n)
			}
		}
	}
	return out
}

// MaskAddress hides the middle of an address for a report: a mainland
// mobile as 138****5678, another phone with all but its first 3 and last 4
// digits starred, a mail address as its local part's first character,
// "***" and its domain. Text too short to mask is starred whole.
func MaskAddress(ch NotifyType, addr string) string {
	if ch == NotifyEmail {
		at := strings.LastIndexByte(addr, '@')
		if at <= 0 {
			return maskMiddle(addr, 1, 0)
		}
		_, size := utf8.DecodeRuneInString(addr)
		return addr[:size] + "***" + addr[at:]
	}
	if d, ok := strings.CutPrefix(addr, "+86"); ok && mainlandMobile(d) {
		addr = d
	}
	return maskMiddle(addr, 3, 4)
}

// maskMiddle stars the runes of s between its first head and last tail,
// or all of them if s has no more than head+tail.
func maskMiddle(s string, head, tail int) string {
	r := []rune(s)
	if len(r) <= head+tail {
		return strings.Repeat("*", len(r))
	}
	return string(r[:head]) + strings.Repeat("*", len(r)-head-tail) + string(r[len(r)-tail:])
}

// TaskNotifications is how far the notifications of a task are: its
// channels and its messages' counts by channel and status, as the chunks
// recorded them and the dispatchers moved them on.
type TaskNotifications struct {
	Channels []NotifyType `json:"channels"`
	// ByChannel has an entry for every channel of the task, zeros until
	// its first chunk issues.
	ByChannel map[NotifyType]ChannelCounts `json:"byChannel"`
	// Counts are the store's counts as they are (NotificationCounts).
	Counts []NotificationCount `json:"counts"`
}

// ChannelCounts are a task's messages on one channel by status. An inbox
// or popup message is one broadcast that every holder of a coupon of the
// task sees: it counts once, and Recipients says how many see it.
type ChannelCounts struct {
	Queued     int64 `json:"queued"`
	Deferred   int64 `json:"deferred"`
	Sent       int64 `json:"sent"`
	Failed     int64 `json:"failed"`
	Total      int64 `json:"total"`
	Broadcast  bool  `json:"broadcast,omitempty"`
	Recipients int64 `json:"recipients"` // email, SMS: Total; inbox, popup: the coupons issued
}

// NotificationFailuresExport writes a task's failed notifications to w
// as a spreadsheet file, headed by NotificationFailureColumns, the
// addresses masked (MaskAddress), streamed row by row. It returns the
// first error of ns, or ctx's when ctx ends; w holds a partial file then.
type NotificationFailuresExport interface {
	Write(ctx context.Context, w io.Writer, ns iter.Seq2[*Notification, error]) error
}

// NotificationFailureColumns heads the columns of a task's failed
// notifications report: the user, the channel, the address masked
// (MaskAddress), the reason's code and what it means.
func NotificationFailureColumns() []string {
	return []string{"用户ID User ID", "渠道 Channel", "地址 Address", "原因 Reason", "说明 Details"}
}

// DescribeReason says what the reason a notification failed means, in
// Chinese and then in English, as the report's 说明 Details column shows
// it; a provider's own reason is returned as it is.
func DescribeReason(reason string) string {
	switch reason {
	case ReasonNoContact:
		return "没有地址：文件中该行和该用户的联系方式都没有该渠道的地址。 " +
			"No address: neither the file's row nor the user's contact on file has one for the channel."
	case ReasonInvalidContact:
		return "地址无效：既不是手机号（1[3-9] 加 9 位数字，或 +国家代码）也不是邮箱地址。 " +
			"The address is not a mobile number (1[3-9] and 9 digits, or +country code) or a mail address."
	case ReasonOptedOut:
		return "用户已退订该渠道。 The user opted out of the channel."
	}
	return reason
}
