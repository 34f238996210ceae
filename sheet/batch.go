package sheet

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// Field indexes into the columns a Reader extracts.
const (
	fUser = iota
	fPhone
	fMail
	fLang
	nFields
)

var fieldNames = [nFields]string{"user id", "phone", "mail", "lang"}

// batch collects the rows of one Read call. Values that are not already
// stable strings are appended to arena and converted with one allocation in
// finish, so a 5,000-row batch costs one string allocation instead of
// 15,000.
type batch struct {
	rows  []Row
	arena []byte
	fix   []fixup
	// others holds the Row.Others of the rows still to come: one
	// allocation per Read, never reused, so the rows' slices stay valid.
	others []string
}

type fixup struct {
	row      int32
	field    int32
	off, end int32
}

func (b *batch) full() bool { return len(b.rows) == cap(b.rows) }

// add starts a new row with n other columns and returns its index.
func (b *batch) add(line int64, n int) int {
	r := Row{Line: line}
	if n > 0 {
		if len(b.others) < n {
			b.others = make([]string, n*max(cap(b.rows)-len(b.rows), 1))
		}
		r.Others, b.others = b.others[:n:n], b.others[n:]
	}
	b.rows = append(b.rows, r)
	return len(b.rows) - 1
}

func (b *batch) setBytes(row, field int, v []byte) {
	if len(v) == 0 {
		return
	}
	off := len(b.arena)
	b.arena = append(b.arena, v...)
	b.fix = append(b.fix, fixup{int32(row), int32(field), int32(off), int32(len(b.arena))})
}

func (b *batch) setString(row, field int, s string) {
	r := &b.rows[row]
	switch field {
	case fUser:
		r.UserID = s
	case fPhone:
		r.Phone = s
	case fMail:
		r.Mail = s
	case fLang:
		r.Lang = s
	default:
		r.Others[field-nFields] = s
	}
}

// setNumber stores the text of a numeric cell, normalised by number.
func (b *batch) setNumber(row, field int, v []byte, header string) {
	out, ok := number(v)
	if !ok {
		b.inexact(row, field, v, header)
	}
	b.setBytes(row, field, out)
}

// inexact marks the row with ErrInexactNumber for value v of the user id.
// A phone beyond 2^53 has more digits than any phone number: it is kept
// as written, for the caller to find it invalid, and the row stays usable.
func (b *batch) inexact(row, field int, v []byte, header string) {
	r := &b.rows[row]
	if field == fUser && r.Err == nil {
		r.Err = fmt.Errorf("%w: %s %s (column %q) is above 2^53 = 9007199254740992, where Excel "+
			"drops digits (it keeps 17 at most); store the column as text (format the cells as Text and type the ids again)",
			ErrInexactNumber, fieldNames[field], v, header)
	}
}

func (b *batch) finish() {
	if len(b.fix) == 0 {
		return
	}
	s := string(b.arena)
	for _, f := range b.fix {
		b.setString(int(f.row), int(f.field), s[f.off:f.end])
	}
	b.arena = b.arena[:0]
	b.fix = b.fix[:0]
}

const maxExact = 1 << 53

// maxShortestDigits is the most significant digits in the shortest text
// that reads back as the same double (strconv.FormatFloat(f, 'g', -1, 64)
// and Excel, which writes at most 17, alike).
const maxShortestDigits = 17

// number turns the text of a numeric cell into what the user typed: an
// integer in plain digits when the value is an exact integer (so "1E9" and
// "1.0E+9" read as "1000000000"), the text as written when the value is not
// an integer or not a number at all, and ok == false when the value is an
// integer above 2^53, whose digits Excel has already lost.
//
// Above 2^53, a plain integer with more than maxShortestDigits significant
// digits is taken as exact: no writer that held the value as a double
// could have printed it, so it is the digits typed, kept by a writer that
// stores numbers as text (excelize with an int64, some exporters).
// Anything a double could have printed (1234567890123456800, 1.23E+18) is
// refused.
func number(v []byte) (out []byte, ok bool) {
	if len(v) <= 15 && len(v) > 0 && (v[0] != '0' || len(v) == 1) {
		plain := true
		for _, c := range v {
			if c < '0' || c > '9' {
				plain = false
				break
			}
		}
		if plain {
			return v, true
		}
	}
	t := strings.TrimSpace(unsafe.String(unsafe.SliceData(v), len(v)))
	if d := strings.TrimPrefix(t, "-"); d != "" && strings.Trim(d, "0123456789") == "" {
		// Plain digits: compare as text, since parsing would round
		// 9007199254740993 down to 2^53.
		d = strings.TrimLeft(d, "0")
		if len(d) > 16 || len(d) == 16 && d > "9007199254740992" {
			return v, len(strings.TrimRight(d, "0")) > maxShortestDigits
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) || f != math.Trunc(f) {
		return v, true
	}
	if math.Abs(f) > maxExact {
		return v, false
	}
	return strconv.AppendInt(nil, int64(f), 10), true
}

// headerNames are the accepted header names per field, lower case.
var headerNames = [nFields][]string{
	// "用户ID User ID" heads the user column of a failure report, so a
	// report can be uploaded again as it is.
	{"userid", "user_id", "用户id", "user id", "用户id user id"},
	{"phone", "手机号", "mobile"},
	{"mail", "email", "邮箱"},
	{"lang", "language", "语言"},
}

// matchHeader maps header cells to fields. cols[f] is the index in cells of
// field f's column, or -1. The first matching column wins.
func matchHeader(cells []string) (cols [nFields]int, names [nFields]string, err error) {
	cols, names, _, err = matchHeaderOthers(cells, false)
	return cols, names, err
}

// matchHeaderOthers is matchHeader; with others, only the user id is a
// field, and every other column with a non-blank header is an other
// column: others[k] is its index in cells, its name is names[nFields+k]
// (trimmed).
func matchHeaderOthers(cells []string, withOthers bool) (cols [nFields]int, names [nFields]string, others []otherCol, err error) {
	for f := range cols {
		cols[f] = -1
	}
	for i, c := range cells {
		// Case and runs of white space (a line break in the cell) aside.
		k := strings.ToLower(strings.Join(strings.Fields(strings.TrimPrefix(c, "\ufeff")), " "))
		other := withOthers && k != ""
		for f, accepted := range headerNames {
			if cols[f] >= 0 || (withOthers && f != fUser) {
				continue
			}
			for _, a := range accepted {
				if k == a {
					cols[f] = i
					names[f] = strings.TrimSpace(c)
					other = false
				}
			}
		}
		if other {
			others = append(others, otherCol{Index: i, Name: strings.TrimSpace(strings.TrimPrefix(c, "\ufeff"))})
		}
	}
	if cols[fUser] < 0 {
		var found []string
		for _, c := range cells {
			if c = strings.TrimSpace(c); c != "" {
				if len(found) == 20 {
					found = append(found, "...")
					break
				}
				found = append(found, strconv.Quote(c))
			}
		}
		return cols, names, nil, fmt.Errorf("%w: the header row must name it userId, user_id, user id, 用户ID or 用户ID User ID "+
			"(phone: phone, mobile or 手机号; mail: mail, email or 邮箱); found %s",
			ErrNoUserIDColumn, strings.Join(found, ", "))
	}
	return cols, names, others, nil
}

// otherCol is a column read with Options.Others.
type otherCol struct {
	Index int    // 0-based among the header row's cells
	Name  string // the header cell, trimmed
}

// otherNames returns the names of cols, nil for none.
func otherNames(cols []otherCol) []string {
	if len(cols) == 0 {
		return nil
	}
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
	}
	return names
}

// isBlank reports whether s holds only white space, Unicode spaces such as
// U+3000 (the ideographic space) included.
func isBlank(s []byte) bool {
	for _, c := range s {
		switch {
		case c == ' ', c == '\t', c == '\r', c == '\n':
		case c >= utf8.RuneSelf:
			return len(bytes.TrimSpace(s)) == 0
		default:
			return false
		}
	}
	return true
}
