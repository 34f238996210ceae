package http

import (
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/quanhq/quan"
)

// checkText walks body, one JSON value, and returns a FieldError,
// by the JSON path of the field, for each string (key or value) that
// holds what no field of the API takes and encoding/json would not say:
// bytes that are not UTF-8 and a \u escape of half a surrogate pair
// ("\ud800"), which it would store as U+FFFD, and control characters
// other than tab, line feed and carriage return ("\u0000", a raw DEL or
// C1 character). Which text each field takes beyond that (one line for a
// name, no bidirectional formatting) is for the entity's Validate to say.
// Given bytes that are not JSON it ends all the same, its answer
// meaningless.
func checkText(body []byte) []quan.FieldError {
	s := textScanner{b: body}
	s.value("")
	return s.bad
}

// textScanner reads a valid JSON value for checkText.
type textScanner struct {
	b   []byte
	i   int
	bad []quan.FieldError
}

func (s *textScanner) add(path, msg string) {
	if len(s.bad) >= maxBodyProblems {
		return
	}
	if path == "" {
		path = "body"
	}
	s.bad = append(s.bad, quan.FieldError{Field: path, Message: msg})
}

func (s *textScanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// value reads the value at s.i, found at path.
func (s *textScanner) value(path string) {
	s.space()
	if s.i >= len(s.b) {
		return
	}
	switch s.b[s.i] {
	case '{':
		s.i++
		for {
			s.space()
			if s.i >= len(s.b) || s.b[s.i] == '}' {
				s.i++
				return
			}
			if s.b[s.i] == ',' {
				s.i++
				continue
			}
			key, problem := s.str()
			if problem != "" {
				s.add(path, "has a key that "+problem)
			}
			s.space()
			s.i++ // the colon
			s.value(join(path, key))
		}
	case '[':
		s.i++
		for n := 0; ; {
			s.space()
			if s.i >= len(s.b) || s.b[s.i] == ']' {
				s.i++
				return
			}
			if s.b[s.i] == ',' {
				s.i++
				continue
			}
			s.value(path + "[" + strconv.Itoa(n) + "]")
			n++
		}
	case '"':
		if _, problem := s.str(); problem != "" {
			s.add(path, problem)
		}
	default: // a number, true, false or null
		start := s.i
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				if s.i == start { // not JSON: go on all the same
					s.i++
				}
				return
			}
			s.i++
		}
	}
}

// str reads the string at s.i and returns it as encoding/json decodes
// it (only as far as a path needs: a key), with the first problem of its
// text, "" if none.
func (s *textScanner) str() (string, string) {
	s.i++ // the opening quote
	start := s.i
	plain := true // no escape: the key is the bytes as they are
	problem := ""
	note := func(p string) {
		if problem == "" {
			problem = p
		}
	}
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			raw := s.b[start:s.i]
			s.i++
			if plain {
				return string(raw), problem
			}
			v, err := strconv.Unquote(`"` + string(raw) + `"`)
			if err != nil { // a JSON escape Go does not know (\/): the raw key names it well enough
				v = string(raw)
			}
			return v, problem
		case c == '\\':
			plain = false
			if s.i+1 >= len(s.b) {
				s.i = len(s.b)
				continue
			}
			switch s.b[s.i+1] {
			case 'u':
				s.i += 2
				note(s.escape())
			case 'b':
				note(controlProblem('\b'))
				s.i += 2
			case 'f':
				note(controlProblem('\f'))
				s.i += 2
			default: // \" \\ \/ \n \r \t
				s.i += 2
			}
		case c < utf8.RuneSelf:
			if c == 0x7f {
				note(controlProblem(rune(c)))
			}
			s.i++
		default:
			r, n := utf8.DecodeRune(s.b[s.i:])
			switch {
			case r == utf8.RuneError && n == 1:
				note(fmt.Sprintf("is not valid UTF-8 (byte %#x)", c))
			case unicode.IsControl(r):
				note(controlProblem(r))
			}
			s.i += n
		}
	}
	return string(s.b[start:]), problem
}

// escape reads the four hex digits of a \u escape at s.i, and the low
// half that must follow a high surrogate, and returns the problem of the
// character they make, "" if none.
func (s *textScanner) escape() string {
	r, ok := s.hex4()
	if !ok {
		return ""
	}
	switch {
	case r >= 0xDC00 && r <= 0xDFFF:
		return lone(r)
	case r >= 0xD800 && r <= 0xDBFF:
		if s.i+1 < len(s.b) && s.b[s.i] == '\\' && s.b[s.i+1] == 'u' {
			save := s.i
			s.i += 2
			if lo, ok := s.hex4(); ok && lo >= 0xDC00 && lo <= 0xDFFF {
				return "" // a pair: one character beyond U+FFFF
			}
			s.i = save // the next escape is read on its own
		}
		return lone(r)
	case r == '\t' || r == '\n' || r == '\r':
		return ""
	case unicode.IsControl(r):
		return controlProblem(r)
	}
	return ""
}

// hex4 reads four hex digits at s.i.
func (s *textScanner) hex4() (rune, bool) {
	if s.i+4 > len(s.b) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(s.b[s.i:s.i+4]), 16, 16)
	if err != nil {
		return 0, false
	}
	s.i += 4
	return rune(n), true
}

func lone(r rune) string {
	return fmt.Sprintf(`holds \u%04x, half of a UTF-16 surrogate pair without its other half: no character`, r)
}

func controlProblem(r rune) string {
	return fmt.Sprintf("must not contain %U: no control characters other than tab, line feed and carriage return", r)
}
