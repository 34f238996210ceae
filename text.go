package quan

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// What every string and time quan keeps must be, whatever front it came
// through (a JSON body, a form of the console, a path, a query, a file)
// and whatever store keeps it: SQLite takes any bytes and any year,
// MySQL refuses text that is not UTF-8 and years its DATETIME cannot
// hold, and encoding/json cannot write a year past 9999. So the entities'
// Validate methods hold their text and times to these rules before any
// store sees them, and every store answers the same.

// TextProblem says what keeps s from being text quan keeps, or "" if
// nothing does: s must be valid UTF-8, and hold no control character
// (C0, DEL, C1) other than those in allowed, nor a bidirectional override
// or isolate (U+202A–U+202E, U+2066–U+2069), which would show the text
// in another order than the stored one wherever it is shown (a console,
// a wallet, a spreadsheet of a report).
func TextProblem(s, allowed string) string {
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			return fmt.Sprintf("is not valid UTF-8 (byte %#x at %d)", s[i], i)
		case strings.ContainsRune(allowed, r):
		case unicode.IsControl(r), r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
			if allowed == "" {
				return fmt.Sprintf("must not contain %U: no control or bidirectional formatting characters", r)
			}
			return fmt.Sprintf("must not contain %U: no control or bidirectional formatting characters other than %s",
				r, controlNames(allowed))
		}
	}
	return ""
}

// controlNames names the characters of allowed for a message.
func controlNames(allowed string) string {
	var names []string
	for _, r := range allowed {
		switch r {
		case '\n':
			names = append(names, "line feed")
		case '\r':
			names = append(names, "carriage return")
		case '\t':
			names = append(names, "tab")
		default:
			names = append(names, fmt.Sprintf("%U", r))
		}
	}
	switch len(names) {
	case 1:
		return names[0]
	default:
		return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
	}
}

// Line checks s as one line of text (TextProblem with nothing allowed):
// a name, an id, a code, a tag.
func (v *Validation) Line(field, s string) {
	v.Text(field, s, "")
}

// Text checks s as TextProblem does, the control characters in allowed
// allowed ("\n\t" for text of several lines).
func (v *Validation) Text(field, s, allowed string) {
	if p := TextProblem(s, allowed); p != "" {
		v.Add(field, p)
	}
}

// MinYear and MaxYear bound the years of the times quan keeps, in UTC.
const (
	MinYear = 1
	MaxYear = 9999
)

// TimeProblem says what keeps t from being a time quan keeps, or "" if
// nothing does: in UTC, it must fall from 0001-01-01 to 9999-12-31 (the
// zero time.Time, which means "no time" throughout quan, is among them).
// A time given in another zone counts in UTC: 9999-12-31T23:00:00-08:00
// is in the year 10000.
func TimeProblem(t time.Time) string {
	if y := t.UTC().Year(); y < MinYear || y > MaxYear {
		return fmt.Sprintf("%s is out of range: a time must fall from 0001-01-01 to 9999-12-31 (UTC)", formatAnyTime(t))
	}
	return ""
}

// formatAnyTime formats t as RFC 3339 where it can, with its year as it
// is where it cannot (a year of five digits, or before year 0).
func formatAnyTime(t time.Time) string {
	if y := t.Year(); y >= 0 && y <= 9999 {
		return t.Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("%d-%s", t.Year(), t.Format("01-02T15:04:05Z07:00"))
}

// Time checks that t is a time quan keeps (TimeProblem).
func (v *Validation) Time(field string, t time.Time) {
	if p := TimeProblem(t); p != "" {
		v.Add(field, p)
	}
}
