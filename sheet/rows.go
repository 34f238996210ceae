package sheet

import (
	"fmt"
	"io"
	"unsafe"
)

// xlsxSource streams the rows of one worksheet.
type xlsxSource struct {
	s       *stream
	x       *xscan
	sst     *sst
	maxRows int64
	nrows   int64

	inData     bool  // inside <sheetData>
	done       bool  // </sheetData> seen
	row        int64 // number of the last row element
	last       int64 // number of the header or the last data row
	haveHeader bool
	cols       [nFields]int // 1-based column of each field, 0 if absent
	names      [nFields]string
	withOthers bool
	ocols      []otherCol // with Options.Others
	ofield     []int32    // with others: by 1-based column, nFields+k for other k, else 0

	cells    [nFields]cellValue
	ocells   []cellValue // the other columns' cells
	hdrCells []string
	isBuf    []byte // inline string text of the current row
}

type cellKind uint8

const (
	kNone   cellKind = iota
	kText            // bytes, as written
	kNum             // bytes of a number, normalised on commit
	kShared          // string from the shared string table
)

type cellValue struct {
	kind cellKind
	b    []byte
	s    string
}

func (src *xlsxSource) close() { src.s.close() }

func (src *xlsxSource) others() []string { return otherNames(src.ocols) }

// readHeader parses rows up to the header row.
func (src *xlsxSource) readHeader() error {
	b := batch{}
	if err := src.fill(&b); err != nil {
		if err == io.EOF {
			return ErrNoHeader
		}
		return err
	}
	return nil
}

func (src *xlsxSource) fill(b *batch) error {
	x := src.x
	for {
		if src.done {
			if !src.haveHeader {
				return ErrNoHeader
			}
			return io.EOF
		}
		x.b, x.i = src.s.win, src.s.pos
		err := src.rows(b)
		src.s.pos = x.i
		switch {
		case err == nil:
			if src.done {
				continue
			}
			return nil
		case err != errIncomplete:
			return err
		}
		ok, err := src.s.fill(MaxRowBytes)
		if err != nil {
			return fmt.Errorf("%w: row %d is longer than %d bytes", ErrTooLong, src.row+1, MaxRowBytes)
		}
		if !ok {
			if src.s.err != io.EOF {
				return fmt.Errorf("read xlsx: %w", src.s.err)
			}
			if !src.inData {
				return fmt.Errorf("read xlsx: %w: worksheet has no sheetData element", ErrMalformed)
			}
			return fmt.Errorf("read xlsx: %w: worksheet XML ends inside row %d", ErrMalformed, src.row+1)
		}
	}
}

// rows parses complete rows from the window into b until b is full (once
// the header is known), the sheet data ends (src.done) or the window ends
// (errIncomplete, with x.i at the start of the unfinished element).
func (src *xlsxSource) rows(b *batch) error {
	x := src.x
	for !src.haveHeader || !b.full() {
		if _, err := x.toLT(); err != nil {
			return err
		}
		start := x.i
		kind, name, empty, err := x.tag()
		if err != nil {
			x.i = start
			return err
		}
		if !src.inData {
			if kind == tagStart && string(name) == "sheetData" {
				if empty {
					src.done = true
					return nil
				}
				src.inData = true
			}
			continue
		}
		switch {
		case kind == tagEnd && string(name) == "sheetData":
			src.done = true
			return nil
		case kind == tagEnd:
			return malformed("unexpected </%s> in sheetData", name)
		case kind != tagStart:
			continue
		case string(name) != "row":
			if !empty {
				if err := x.skip(); err != nil {
					x.i = start
					return err
				}
			}
			continue
		}
		num := src.row + 1
		if x.attrR != nil {
			n, ok := parseRowNum(x.attrR)
			if !ok {
				return malformed("bad row number %q", truncate(x.attrR, 20))
			}
			num = n
		}
		if empty {
			src.row = num
			continue
		}
		nonBlank, err := src.rowBody()
		if err != nil {
			x.i = start
			return err
		}
		src.row = num
		if !nonBlank {
			continue
		}
		if err := src.commit(b, num); err != nil {
			return err
		}
	}
	return nil
}

// rowBody parses the cells of a row after its start tag, through </row>.
// It reports whether any cell holds a non-blank value.
func (src *xlsxSource) rowBody() (nonBlank bool, err error) {
	x := src.x
	x.scratch = x.scratch[:0]
	src.isBuf = src.isBuf[:0]
	src.cells = [nFields]cellValue{}
	clear(src.ocells)
	if !src.haveHeader {
		src.hdrCells = src.hdrCells[:0]
	}
	col := 0
	for {
		if _, err := x.toLT(); err != nil {
			return false, err
		}
		kind, name, empty, err := x.tag()
		if err != nil {
			return false, err
		}
		switch {
		case kind == tagEnd && string(name) == "row":
			return nonBlank, nil
		case kind == tagEnd:
			return false, malformed("unexpected </%s> in row %d", name, src.row+1)
		case kind != tagStart:
			continue
		case string(name) != "c":
			if !empty {
				if err := x.skip(); err != nil {
					return false, err
				}
			}
			continue
		}
		if x.attrR != nil {
			c, ok := parseCol(x.attrR)
			if !ok {
				return false, malformed("bad cell reference %q", truncate(x.attrR, 20))
			}
			col = c
		} else {
			col++
			if col > maxCol {
				return false, malformed("row %d has more than %d columns", src.row+1, maxCol)
			}
		}
		if empty {
			continue
		}
		t := x.attrT
		v, ck, err := src.cellBody(t)
		if err != nil {
			return false, err
		}
		if ck == kNone {
			continue
		}
		cv := cellValue{kind: ck}
		if ck == kShared {
			idx, ok := parseIndex(v)
			s, found, tooLong := "", false, false
			if ok && src.sst != nil {
				s, found, tooLong = src.sst.get(idx)
			}
			if !found {
				return false, malformed("row %d: shared string index %q out of range", src.row+1, truncate(v, 20))
			}
			if tooLong {
				if f := src.field(col); f >= 0 || !src.haveHeader {
					return false, src.tooLong(col)
				}
				nonBlank = true
				continue
			}
			cv.s = s
			if !nonBlank && !isBlankString(s) {
				nonBlank = true
			}
		} else {
			cv.b = v
			if !nonBlank && !isBlank(v) {
				nonBlank = true
			}
		}
		if !src.haveHeader {
			if err := src.headerCell(col, cv); err != nil {
				return false, err
			}
			continue
		}
		if f := src.field(col); f >= 0 {
			if len(cv.b) > MaxCellBytes {
				return false, src.tooLong(col)
			}
			if f < nFields {
				src.cells[f] = cv
			} else {
				src.ocells[f-nFields] = cv
			}
		}
	}
}

func (src *xlsxSource) tooLong(col int) error {
	return fmt.Errorf("%w: row %d column %s: cell longer than %d bytes",
		ErrTooLong, src.row+1, colName(col), MaxCellBytes)
}

// cellBody parses a cell's children after its start tag, through </c>,
// and returns its value and how to interpret it.
func (src *xlsxSource) cellBody(t []byte) (v []byte, kind cellKind, err error) {
	x := src.x
	if v, kind, ok := x.fastCell(t); ok {
		return v, kind, nil
	}
	for {
		if _, err := x.toLT(); err != nil {
			return nil, 0, err
		}
		tk, name, empty, err := x.tag()
		if err != nil {
			return nil, 0, err
		}
		switch {
		case tk == tagEnd:
			return v, kind, nil
		case tk != tagStart || empty:
			continue
		case string(name) == "v":
			if v, err = x.text(false); err != nil {
				return nil, 0, err
			}
			switch string(t) {
			case "s":
				kind = kShared
			case "", "n":
				kind = kNum
			default:
				kind = kText
			}
		case string(name) == "is":
			n := len(src.isBuf)
			if src.isBuf, err = x.stringItem(src.isBuf); err != nil {
				return nil, 0, err
			}
			v, kind = src.isBuf[n:len(src.isBuf):len(src.isBuf)], kText
		default:
			if err := x.skip(); err != nil {
				return nil, 0, err
			}
		}
	}
}

func (src *xlsxSource) field(col int) int {
	switch col {
	case src.cols[fUser]:
		return fUser
	case src.cols[fPhone]:
		return fPhone
	case src.cols[fMail]:
		return fMail
	case src.cols[fLang]:
		return fLang
	}
	if col < len(src.ofield) && src.ofield[col] > 0 {
		return int(src.ofield[col])
	}
	return -1
}

func (src *xlsxSource) headerCell(col int, cv cellValue) error {
	s := cv.s
	if cv.kind != kShared {
		if len(cv.b) > MaxCellBytes {
			return src.tooLong(col)
		}
		s = string(cv.b)
	}
	for len(src.hdrCells) < col {
		src.hdrCells = append(src.hdrCells, "")
	}
	src.hdrCells[col-1] = s
	return nil
}

// commit turns the parsed row into the header or a Row of b.
func (src *xlsxSource) commit(b *batch, num int64) error {
	if !src.haveHeader {
		cols, names, others, err := matchHeaderOthers(src.hdrCells, src.withOthers)
		if err != nil {
			return fmt.Errorf("row %d: %w", num, err)
		}
		for f, c := range cols {
			src.cols[f] = c + 1 // -1 (absent) becomes 0
		}
		if len(others) > 0 {
			src.ocols, src.ocells = others, make([]cellValue, len(others))
			src.ofield = make([]int32, others[len(others)-1].Index+2)
			for k, oc := range others {
				src.ofield[oc.Index+1] = int32(nFields + k)
			}
		}
		src.names = names
		src.haveHeader = true
		src.hdrCells = nil
		src.last = num
		return nil
	}
	src.nrows++
	if src.nrows > src.maxRows {
		return fmt.Errorf("%w: more than %d data rows (row %d)", ErrTooManyRows, src.maxRows, num)
	}
	ri := b.add(num, len(src.ocols))
	// The rows between are blank: empty row elements, or none at all.
	b.rows[ri].BlankBefore, src.last = max(0, num-src.last-1), num
	for f, c := range &src.cells {
		src.set(b, ri, f, c)
	}
	for k, c := range src.ocells {
		src.set(b, ri, nFields+k, c)
	}
	return nil
}

// set stores cell c as field f of row ri.
func (src *xlsxSource) set(b *batch, ri, f int, c cellValue) {
	switch c.kind {
	case kShared:
		b.setString(ri, f, c.s)
	case kText:
		b.setBytes(ri, f, c.b)
	case kNum:
		name := ""
		if f < nFields {
			name = src.names[f]
		}
		b.setNumber(ri, f, c.b, name)
	}
}

const maxCol = 16384 // XFD

// parseCol returns the 1-based column of a cell reference such as "B7".
func parseCol(r []byte) (int, bool) {
	col := 0
	i := 0
	for ; i < len(r); i++ {
		c := r[i]
		switch {
		case 'A' <= c && c <= 'Z':
			col = col*26 + int(c-'A') + 1
		case 'a' <= c && c <= 'z':
			col = col*26 + int(c-'a') + 1
		default:
			return col, i > 0 && col <= maxCol
		}
		if col > maxCol {
			return 0, false
		}
	}
	return col, i > 0
}

func colName(col int) string {
	var b []byte
	for col > 0 {
		col--
		b = append([]byte{byte('A' + col%26)}, b...)
		col /= 26
	}
	return string(b)
}

func parseRowNum(r []byte) (int64, bool) {
	if len(r) == 0 || len(r) > 12 {
		return 0, false
	}
	var n int64
	for _, c := range r {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, n > 0
}

func isBlankString(s string) bool {
	return isBlank(unsafe.Slice(unsafe.StringData(s), len(s)))
}

// fastCell recognises the two cell bodies that make up nearly every large
// sheet, <v>N</v></c> and <is><t>TEXT</t></is></c>, with plain text and no
// white space, and leaves everything else to the general parser.
func (x *xscan) fastCell(t []byte) (v []byte, kind cellKind, ok bool) {
	b := x.b[x.i:]
	switch {
	case len(t) == 9 && string(t) == "inlineStr":
		if len(b) < 7 || string(b[:7]) != "<is><t>" {
			return nil, 0, false
		}
		k := indexByte(b[7:], '<')
		if k < 0 || !plainText(b[7:7+k], true) {
			return nil, 0, false
		}
		if e := b[7+k:]; len(e) < 13 || string(e[:13]) != "</t></is></c>" {
			return nil, 0, false
		}
		x.i += 7 + k + 13
		return b[7 : 7+k], kText, true
	case len(t) == 0, len(t) == 1 && (t[0] == 's' || t[0] == 'n'):
		if len(b) < 3 || string(b[:3]) != "<v>" {
			return nil, 0, false
		}
		k := indexByte(b[3:], '<')
		if k < 0 || !plainText(b[3:3+k], false) {
			return nil, 0, false
		}
		if e := b[3+k:]; len(e) < 8 || string(e[:8]) != "</v></c>" {
			return nil, 0, false
		}
		x.i += 3 + k + 8
		kind = kNum
		if len(t) == 1 && t[0] == 's' {
			kind = kShared
		}
		return b[3 : 3+k], kind, true
	}
	return nil, 0, false
}

// plainText reports character data that needs no decoding.
func plainText(v []byte, bstr bool) bool {
	for _, c := range v {
		if c == '&' || c == '\r' || (c == '_' && bstr) {
			return false
		}
	}
	return true
}
