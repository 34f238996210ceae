package sheet

import (
	"bytes"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// xscan is a minimal XML tokenizer over a window that may end in the middle
// of a construct: every method returns errIncomplete when it needs bytes
// beyond len(b), and the caller then refills and starts the enclosing
// element again. It understands what SpreadsheetML uses (elements with
// namespace prefixes, attributes, character data with entities, CDATA,
// comments, processing instructions) and refuses DTDs.
type xscan struct {
	b []byte
	i int

	// Attributes of the last start tag that matter to the sheet parser.
	attrR, attrT []byte

	// scratch holds decoded text for the element being parsed. Slices
	// returned into it stay valid until the caller truncates it.
	scratch []byte
}

type tagKind uint8

const (
	tagStart tagKind = iota
	tagEnd
	tagOther // comment, processing instruction, CDATA outside text
)

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: worksheet XML: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

// local strips a namespace prefix.
func local(name []byte) []byte {
	for k := len(name) - 1; k >= 0; k-- {
		if name[k] == ':' {
			return name[k+1:]
		}
	}
	return name
}

// indexByte is bytes.IndexByte tuned for the short distances between
// markup characters, where the call overhead would dominate.
func indexByte(b []byte, c byte) int {
	n := min(len(b), 24)
	for k := 0; k < n; k++ {
		if b[k] == c {
			return k
		}
	}
	if n == len(b) {
		return -1
	}
	if k := bytes.IndexByte(b[n:], c); k >= 0 {
		return n + k
	}
	return -1
}

// toLT advances to the next '<'. It reports whether the skipped text held
// anything but white space.
func (x *xscan) toLT() (text bool, err error) {
	if x.i < len(x.b) && x.b[x.i] == '<' {
		return false, nil
	}
	k := bytes.IndexByte(x.b[x.i:], '<')
	if k < 0 {
		return false, errIncomplete
	}
	text = !isBlank(x.b[x.i : x.i+k])
	x.i += k
	return text, nil
}

// nameEnd returns the end of the name starting at b[j] and the start of
// its local part.
func nameEnd(b []byte, j int) (end, loc int) {
	loc = j
	for ; j < len(b); j++ {
		switch c := b[j]; c {
		case ' ', '\n', '\r', '\t', '>', '/', '=':
			return j, loc
		case ':':
			loc = j + 1
		}
	}
	return j, loc
}

// tag parses the markup starting at b[i] == '<'. For start tags it records
// the r and t attributes and reports a self-closing tag in empty. name is
// the local name, without namespace prefix.
func (x *xscan) tag() (kind tagKind, name []byte, empty bool, err error) {
	b, i := x.b, x.i+1
	if i >= len(b) {
		return 0, nil, false, errIncomplete
	}
	switch b[i] {
	case '/':
		i++
		j, loc := nameEnd(b, i)
		name = b[loc:j]
		for j < len(b) && isSpace(b[j]) {
			j++
		}
		if j >= len(b) {
			return 0, nil, false, errIncomplete
		}
		if b[j] != '>' || j == i {
			return 0, nil, false, malformed("bad end tag")
		}
		x.i = j + 1
		return tagEnd, name, false, nil
	case '?':
		k := bytes.Index(b[i:], []byte("?>"))
		if k < 0 {
			return 0, nil, false, errIncomplete
		}
		x.i = i + k + 2
		return tagOther, nil, false, nil
	case '!':
		rest := b[i:]
		switch {
		case bytes.HasPrefix(rest, []byte("!--")):
			k := bytes.Index(rest[3:], []byte("-->"))
			if k < 0 {
				return 0, nil, false, errIncomplete
			}
			x.i = i + 3 + k + 3
			return tagOther, nil, false, nil
		case bytes.HasPrefix(rest, []byte("![CDATA[")):
			k := bytes.Index(rest[8:], []byte("]]>"))
			if k < 0 {
				return 0, nil, false, errIncomplete
			}
			x.i = i + 8 + k + 3
			return tagOther, nil, false, nil
		case len(rest) < 9:
			return 0, nil, false, errIncomplete
		default:
			return 0, nil, false, malformed("DTDs and declarations are not supported")
		}
	}
	j, loc := nameEnd(b, i)
	if j == i && j < len(b) {
		return 0, nil, false, malformed("bad start tag")
	}
	name = b[loc:j]
	x.attrR, x.attrT = nil, nil
	for {
		for j < len(b) && isSpace(b[j]) {
			j++
		}
		if j >= len(b) {
			return 0, nil, false, errIncomplete
		}
		switch b[j] {
		case '>':
			x.i = j + 1
			return tagStart, name, false, nil
		case '/':
			if j+1 >= len(b) {
				return 0, nil, false, errIncomplete
			}
			if b[j+1] != '>' {
				return 0, nil, false, malformed("bad empty tag")
			}
			x.i = j + 2
			return tagStart, name, true, nil
		}
		a := j
		j, _ = nameEnd(b, j)
		an := b[a:j]
		for j < len(b) && isSpace(b[j]) {
			j++
		}
		if j >= len(b) {
			return 0, nil, false, errIncomplete
		}
		if b[j] != '=' || len(an) == 0 {
			return 0, nil, false, malformed("bad attribute in <%s>", name)
		}
		j++
		for j < len(b) && isSpace(b[j]) {
			j++
		}
		if j >= len(b) {
			return 0, nil, false, errIncomplete
		}
		q := b[j]
		if q != '"' && q != '\'' {
			return 0, nil, false, malformed("unquoted attribute in <%s>", name)
		}
		k := indexByte(b[j+1:], q)
		if k < 0 {
			return 0, nil, false, errIncomplete
		}
		v := b[j+1 : j+1+k]
		j += k + 2
		if len(an) == 1 {
			switch an[0] {
			case 'r':
				x.attrR = v
			case 't':
				x.attrT = v
			}
		}
	}
}

// text reads the character data of the element whose start tag was just
// parsed, up to and including its end tag. The result points into the
// window when no decoding is needed, else into scratch. bstr applies the
// OOXML _xHHHH_ escapes used in string items.
func (x *xscan) text(bstr bool) ([]byte, error) {
	b := x.b
	k := indexByte(b[x.i:], '<')
	if k < 0 {
		return nil, errIncomplete
	}
	raw := b[x.i : x.i+k]
	j := x.i + k
	if j+1 < len(b) && b[j+1] == '/' {
		if plainText(raw, bstr) {
			// Skip the end tag; its name is not checked.
			e := indexByte(b[j:], '>')
			if e < 0 {
				return nil, errIncomplete
			}
			x.i = j + e + 1
			return raw, nil
		}
	}
	return x.slowText(bstr)
}

// slowText is text for character data with entities, CDATA sections,
// comments or carriage returns.
func (x *xscan) slowText(bstr bool) ([]byte, error) {
	start := len(x.scratch)
	b := x.b
	for {
		k := bytes.IndexByte(b[x.i:], '<')
		if k < 0 {
			x.scratch = x.scratch[:start]
			return nil, errIncomplete
		}
		var err error
		x.scratch, err = decodeText(x.scratch, b[x.i:x.i+k])
		if err != nil {
			return nil, err
		}
		x.i += k
		if x.i+1 >= len(b) {
			x.scratch = x.scratch[:start]
			return nil, errIncomplete
		}
		if bytes.HasPrefix(b[x.i:], []byte("<![CDATA[")) {
			e := bytes.Index(b[x.i+9:], []byte("]]>"))
			if e < 0 {
				x.scratch = x.scratch[:start]
				return nil, errIncomplete
			}
			x.scratch = append(x.scratch, b[x.i+9:x.i+9+e]...)
			x.i += 9 + e + 3
			continue
		}
		if len(b)-x.i < 9 && bytes.HasPrefix([]byte("<![CDATA["), b[x.i:]) {
			x.scratch = x.scratch[:start]
			return nil, errIncomplete
		}
		kind, _, _, err := x.tag()
		if err != nil {
			x.scratch = x.scratch[:start]
			return nil, err
		}
		switch kind {
		case tagOther:
			continue
		case tagStart:
			return nil, malformed("unexpected element inside text")
		}
		out := x.scratch[start:]
		if bstr {
			out = unescapeBstr(out)
		}
		return out, nil
	}
}

// decodeText appends character data s to dst with entities decoded and
// line ends normalised as an XML parser does.
func decodeText(dst, s []byte) ([]byte, error) {
	for len(s) > 0 {
		k := bytes.IndexAny(s, "&\r")
		if k < 0 {
			return append(dst, s...), nil
		}
		dst = append(dst, s[:k]...)
		s = s[k:]
		if s[0] == '\r' {
			dst = append(dst, '\n')
			s = s[1:]
			if len(s) > 0 && s[0] == '\n' {
				s = s[1:]
			}
			continue
		}
		e := bytes.IndexByte(s, ';')
		if e < 0 || e > 12 {
			return nil, malformed("bad entity %q", truncate(s, 12))
		}
		name := s[1:e]
		s = s[e+1:]
		switch string(name) {
		case "lt":
			dst = append(dst, '<')
		case "gt":
			dst = append(dst, '>')
		case "amp":
			dst = append(dst, '&')
		case "quot":
			dst = append(dst, '"')
		case "apos":
			dst = append(dst, '\'')
		default:
			if len(name) < 2 || name[0] != '#' {
				return nil, malformed("unknown entity &%s;", name)
			}
			var n uint64
			var err error
			if name[1] == 'x' {
				n, err = strconv.ParseUint(string(name[2:]), 16, 32)
			} else {
				n, err = strconv.ParseUint(string(name[1:]), 10, 32)
			}
			if err != nil || n == 0 || n > utf8.MaxRune || (0xD800 <= n && n < 0xE000) {
				return nil, malformed("bad character reference &%s;", name)
			}
			dst = utf8.AppendRune(dst, rune(n))
		}
	}
	return dst, nil
}

// unescapeBstr decodes the _xHHHH_ escapes with which OOXML stores
// characters XML cannot hold (for example _x000D_ for a carriage return),
// in place. _x005F_ escapes the underscore itself.
func unescapeBstr(s []byte) []byte {
	k := bytes.Index(s, []byte("_x"))
	if k < 0 {
		return s
	}
	out := s[:k]
	for i := k; i < len(s); {
		if s[i] == '_' && i+7 <= len(s) && s[i+1] == 'x' && s[i+6] == '_' {
			if n, err := strconv.ParseUint(string(s[i+2:i+6]), 16, 16); err == nil {
				if n == 0x5F {
					out = append(out, '_')
				} else {
					out = utf8.AppendRune(out, rune(n))
				}
				i += 7
				continue
			}
		}
		out = append(out, s[i])
		i++
	}
	return out
}

func truncate(s []byte, n int) []byte {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// skip skips the element whose start tag was just parsed, children
// included.
func (x *xscan) skip() error {
	depth := 1
	for {
		if _, err := x.toLT(); err != nil {
			return err
		}
		kind, _, empty, err := x.tag()
		if err != nil {
			return err
		}
		switch {
		case kind == tagStart && !empty:
			depth++
		case kind == tagEnd:
			depth--
			if depth == 0 {
				return nil
			}
		}
	}
}
