package quan

import (
	"fmt"
	"net/mail"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ContactProblem is why a recipient cannot be notified on a channel. The
// coupon is issued either way; the notification records the problem.
type ContactProblem string

// Contact problems.
const (
	NoContact      ContactProblem = "no_contact"      // neither the row nor the user's contact on file has an address for the channel
	InvalidContact ContactProblem = "invalid_contact" // the address is not a mobile number or a mail address
)

// ContactError is an address that NormalizePhone or NormalizeMail refused.
// It unwraps to an EINVALID *Error naming the field, so the API answers 400.
type ContactError struct {
	Field  string // "phone" or "mail"
	Value  string // as given
	Reason string // what is wrong, for people
}

func (e *ContactError) Error() string {
	return fmt.Sprintf("invalid %s %q: %s", e.Field, e.Value, e.Reason)
}

// Problem is InvalidContact: the type names the rows' outcome.
func (e *ContactError) Problem() ContactProblem { return InvalidContact }

// Unwrap returns the EINVALID *Error the error stands for.
func (e *ContactError) Unwrap() error {
	return &Error{Code: EINVALID, Message: "invalid contact", Fields: []FieldError{{Field: e.Field, Message: e.Reason}}}
}

// Limits on addresses (RFC 5321 §4.5.3.1).
const (
	maxMailLen      = 254
	maxMailLocalLen = 64
)

// NormalizePhone returns s as an E.164 number ("+8613812345678") or a
// *ContactError. It takes a mainland mobile number, 1[3-9] and nine more
// digits, bare or after +86, 86 or 0086; or any other number in E.164 form,
// '+' then 7 to 15 digits not starting with 0. Spaces, hyphens and
// parentheses between digits are dropped, as spreadsheets and people write
// them. A number after +86 must be a mainland mobile: landlines take no SMS.
func NormalizePhone(s string) (string, error) {
	fail := func(reason string) (string, error) {
		return "", &ContactError{Field: "phone", Value: s, Reason: reason}
	}
	var b strings.Builder
	for i, r := range strings.TrimSpace(s) {
		switch {
		case r >= '0' && r <= '9':
			b.WriteRune(r)
		case r == '+' && i == 0:
			b.WriteRune(r)
		case r == ' ' || r == '-' || r == '(' || r == ')':
		default:
			return fail("only digits, an optional leading +, spaces and hyphens are allowed")
		}
	}
	d := b.String()
	switch {
	case d == "":
		return fail("empty")
	case strings.HasPrefix(d, "+86"):
		d = d[3:]
	case strings.HasPrefix(d, "0086"):
		d = d[4:]
	case strings.HasPrefix(d, "86") && len(d) == 13:
		d = d[2:]
	case strings.HasPrefix(d, "+"):
		if n := len(d) - 1; n < 7 || n > 15 || d[1] == '0' {
			return fail("an international number is + and 7 to 15 digits, the first not 0 (E.164)")
		}
		return d, nil
	}
	if !mainlandMobile(d) {
		return fail("a mainland mobile number is 11 digits starting 13 to 19; other countries need + and the country code")
	}
	return "+86" + d, nil
}

func mainlandMobile(d string) bool {
	if len(d) != 11 || d[0] != '1' || d[1] < '3' || d[1] > '9' {
		return false
	}
	for i := 2; i < len(d); i++ {
		if d[i] < '0' || d[i] > '9' {
			return false
		}
	}
	return true
}

// NormalizeMail returns s as a bare address with its domain in lower case
// ("Li.Lei@example.com" → "Li.Lei@example.com", "a@EXAMPLE.cn" →
// "a@example.cn"), or a *ContactError. The address must parse with
// net/mail, carry no display name, and pass a sanity check that parsing
// alone does not make: at most 254 bytes, a local part of at most 64, a
// domain of dot-separated labels of letters, digits and inner hyphens
// with at least one dot, no quoted local part and no control characters.
func NormalizeMail(s string) (string, error) {
	fail := func(reason string) (string, error) {
		return "", &ContactError{Field: "mail", Value: s, Reason: reason}
	}
	t := strings.TrimSpace(s)
	if t == "" {
		return fail("empty")
	}
	if len(t) > maxMailLen {
		return fail(fmt.Sprintf("longer than %d bytes", maxMailLen))
	}
	if !utf8.ValidString(t) || strings.ContainsFunc(t, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) }) {
		return fail("contains spaces or control characters")
	}
	a, err := mail.ParseAddress(t)
	if err != nil {
		return fail("not a mail address: " + strings.TrimPrefix(err.Error(), "mail: "))
	}
	if a.Name != "" || a.Address != t {
		return fail("give the bare address, without a name or angle brackets")
	}
	at := strings.LastIndexByte(a.Address, '@')
	local, domain := a.Address[:at], strings.ToLower(a.Address[at+1:])
	switch {
	case local == "" || len(local) > maxMailLocalLen:
		return fail(fmt.Sprintf("the part before @ must be 1 to %d bytes", maxMailLocalLen))
	case strings.ContainsAny(local, `"\`):
		return fail("quoted local parts are not accepted")
	case !strings.Contains(domain, "."):
		return fail("the domain has no dot")
	}
	for _, label := range strings.Split(domain, ".") {
		if !mailLabel(label) {
			return fail(fmt.Sprintf("%q is not a domain label", label))
		}
	}
	return local + "@" + domain, nil
}

// mailLabel reports whether l is a DNS label: 1 to 63 bytes of letters
// (any script, for internationalised domains), digits and hyphens, not
// starting or ending with a hyphen.
func mailLabel(l string) bool {
	if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for _, r := range l {
		if r != '-' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			return false
		}
	}
	return true
}

// NormalizeContact normalises s as an address for ch: a phone for SMS, a
// mail address for email. Inbox and popup need no address and refuse any.
func NormalizeContact(ch NotifyType, s string) (string, error) {
	switch ch {
	case NotifySMS:
		return NormalizePhone(s)
	case NotifyEmail:
		return NormalizeMail(s)
	}
	return "", fmt.Errorf("channel %q takes no address", ch)
}

// PickContact returns the address to notify on ch (SMS or email) from
// candidates in order of precedence — the distribution row's column, then
// the user's contact on file. The first non-blank candidate decides: an
// invalid one is InvalidContact even if a later one is valid, because an
// operator who put an address in the file meant that address. No non-blank
// candidate is NoContact.
func PickContact(ch NotifyType, candidates ...string) (string, ContactProblem) {
	for _, c := range candidates {
		if strings.TrimSpace(c) == "" {
			continue
		}
		addr, err := NormalizeContact(ch, c)
		if err != nil {
			return "", InvalidContact
		}
		return addr, ""
	}
	return "", NoContact
}
