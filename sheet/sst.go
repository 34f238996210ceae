package sheet

import (
	"bytes"
	"fmt"
	"io"
	"unsafe"
)

// sst is the shared string table. Text lives in 1 MiB chunks that are never
// modified once full, each entry is packed into one uint64 (chunk, offset,
// length), and lookups return substrings of the chunks: a million-row file
// with three unique strings per row costs about 70 MB instead of the
// several hundred a []string and per-string allocations would.
type sst struct {
	chunks []string
	cur    []byte
	idx    []uint64
	budget int64
}

const (
	sstChunk   = 1 << 20
	sstOffBits = 20
	sstLenBits = 18 // MaxCellBytes fits; longer items are marked
	sstTooLong = 1<<sstLenBits - 1
)

func (t *sst) add(s []byte) error {
	t.budget -= int64(len(s)) + 8
	if t.budget < 0 {
		return fmt.Errorf("%w: shared string table exceeds Options.MaxSharedStrings", ErrTooLong)
	}
	if len(s) > MaxCellBytes {
		t.idx = append(t.idx, sstTooLong)
		return nil
	}
	if len(t.cur)+len(s) > sstChunk {
		t.seal()
	}
	if t.cur == nil {
		t.cur = make([]byte, 0, sstChunk)
	}
	e := uint64(len(t.chunks))<<(sstOffBits+sstLenBits) | uint64(len(t.cur))<<sstLenBits | uint64(len(s))
	t.cur = append(t.cur, s...)
	t.idx = append(t.idx, e)
	return nil
}

// presize reserves the index for the uniqueCount announced in the <sst>
// start tag, within the memory budget: growing it by appending would copy
// it over and over.
func (t *sst) presize(tag []byte) {
	k := bytes.Index(tag, []byte(`uniqueCount="`))
	if k < 0 {
		return
	}
	var n int64
	for _, c := range tag[k+len(`uniqueCount="`):] {
		if c < '0' || c > '9' || n > 1<<40 {
			break
		}
		n = n*10 + int64(c-'0')
	}
	if n = min(n, t.budget/8); n > 0 {
		t.idx = make([]uint64, 0, n)
	}
}

// seal turns the current chunk into a string without copying: cur is
// never written again.
func (t *sst) seal() {
	if len(t.cur) > 0 {
		t.chunks = append(t.chunks, unsafe.String(unsafe.SliceData(t.cur), len(t.cur)))
	}
	t.cur = nil
}

// get returns item i; tooLong reports an item over MaxCellBytes.
func (t *sst) get(i uint64) (s string, ok, tooLong bool) {
	if i >= uint64(len(t.idx)) {
		return "", false, false
	}
	e := t.idx[i]
	n := e & (1<<sstLenBits - 1)
	if n == sstTooLong {
		return "", true, true
	}
	if n == 0 {
		return "", true, false
	}
	off := e >> sstLenBits & (1<<sstOffBits - 1)
	c := e >> (sstOffBits + sstLenBits)
	return t.chunks[c][off : off+n], true, false
}

// readSST parses xl/sharedStrings.xml. Rich text runs of an item are
// concatenated; phonetic runs (rPh) are left out, as Excel shows them.
func readSST(src io.Reader, size, budget int64) (*sst, error) {
	t := &sst{budget: budget}
	s := newStream(src, size)
	defer s.close()
	x := &xscan{}
	inSST := false
	item := make([]byte, 0, 256)
	for {
		x.b = s.win
		x.i = s.pos
		err := t.parse(x, &inSST, &item)
		s.pos = x.i
		if err == nil {
			t.seal()
			return t, nil
		}
		if err != errIncomplete {
			return nil, fmt.Errorf("shared strings: %w", err)
		}
		ok, err := s.fill(MaxRowBytes)
		if err != nil {
			return nil, fmt.Errorf("shared strings: %w: item longer than %d bytes", ErrTooLong, MaxRowBytes)
		}
		if !ok {
			if s.err != io.EOF {
				return nil, fmt.Errorf("shared strings: %w", s.err)
			}
			return nil, fmt.Errorf("shared strings: %w: unexpected end of XML", ErrMalformed)
		}
	}
}

// parse consumes whole <si> items from x, leaving x.i at the start of an
// incomplete one. It returns nil at </sst>.
func (t *sst) parse(x *xscan, inSST *bool, item *[]byte) error {
	for {
		if _, err := x.toLT(); err != nil {
			return err
		}
		if *inSST {
			// Fast path for the common <si><t>TEXT</t></si>.
			if b := x.b[x.i:]; len(b) > 7 && string(b[:7]) == "<si><t>" {
				k := indexByte(b[7:], '<')
				if k >= 0 && plainText(b[7:7+k], true) {
					if e := b[7+k:]; len(e) >= 9 && string(e[:9]) == "</t></si>" {
						if err := t.add(b[7 : 7+k]); err != nil {
							return err
						}
						x.i += 7 + k + 9
						continue
					}
				}
			}
		}
		start := x.i
		kind, name, empty, err := x.tag()
		if err != nil {
			return err
		}
		if !*inSST {
			if kind == tagStart && string(name) == "sst" {
				if empty {
					return nil
				}
				*inSST = true
				t.presize(x.b[start:x.i])
			}
			continue
		}
		switch {
		case kind == tagEnd && string(name) == "sst":
			return nil
		case kind != tagStart:
			continue
		case string(name) != "si":
			if !empty {
				if err := x.skip(); err != nil {
					x.i = start
					return err
				}
			}
			continue
		}
		if empty {
			if err := t.add(nil); err != nil {
				return err
			}
			continue
		}
		x.scratch = x.scratch[:0]
		v, err := x.stringItem((*item)[:0])
		if err != nil {
			x.i = start
			return err
		}
		*item = v[:0]
		if err := t.add(v); err != nil {
			return err
		}
	}
}

// stringItem reads the content of an <si> or <is> element after its start
// tag, up to its end tag, appending the text to dst: a plain <t> or the
// <t> of each rich text run <r>; phonetic runs <rPh> and properties are
// skipped. dst must not share memory with x.scratch.
func (x *xscan) stringItem(dst []byte) ([]byte, error) {
	base := len(dst)
	depth := 0 // inside <r>
	for {
		if _, err := x.toLT(); err != nil {
			return nil, err
		}
		kind, name, empty, err := x.tag()
		if err != nil {
			return nil, err
		}
		switch kind {
		case tagEnd:
			if depth == 0 {
				return dst, nil
			}
			depth--
		case tagStart:
			switch {
			case empty:
			case string(name) == "t":
				v, err := x.text(true)
				if err != nil {
					return nil, err
				}
				dst = append(dst, v...)
				if len(dst)-base > MaxRowBytes {
					return nil, fmt.Errorf("%w: string longer than %d bytes", ErrTooLong, MaxRowBytes)
				}
			case string(name) == "r" && depth == 0:
				depth++
			default:
				if err := x.skip(); err != nil {
					return nil, err
				}
			}
		}
	}
}

// parseIndex parses a shared string index.
func parseIndex(v []byte) (uint64, bool) {
	if len(v) == 0 || len(v) > 10 {
		v = bytes.TrimSpace(v)
		if len(v) == 0 || len(v) > 10 {
			return 0, false
		}
	}
	var n uint64
	for i, c := range v {
		if c < '0' || c > '9' {
			if t := bytes.TrimSpace(v); len(t) < len(v) && len(t) > 0 {
				return parseIndex(t)
			}
			_ = i
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	return n, true
}
