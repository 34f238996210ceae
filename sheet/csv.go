package sheet

import (
	"bytes"
	"fmt"
	"io"
	"sync/atomic"
	"unicode/utf8"

	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"
)

// csvSource streams the records of a CSV file.
type csvSource struct {
	s       *stream
	maxRows int64
	nrows   int64
	line    int64 // line number at s.pos
	delim   byte
	blank   int64 // blank lines since the header or the last data row

	haveHeader bool
	cols       [nFields]int // field index of each column, -1 if absent
	names      [nFields]string
	withOthers bool
	ocols      []otherCol // with Options.Others

	fields [][]byte
	qbuf   []byte
}

func openCSV(ra io.ReaderAt, size int64, opt Options, read *atomic.Int64) (source, int64, error) {
	raw := countingReader{r: io.NewSectionReader(ra, 0, size), n: read}
	c := &csvSource{s: newStream(newAutoDecoder(raw, size), 2*size), maxRows: opt.MaxRows, line: 1, withOthers: opt.Others}
	b := batch{}
	if err := c.fill(&b); err != nil {
		c.close()
		if err == io.EOF {
			err = ErrNoHeader
		}
		return nil, 0, fmt.Errorf("open csv: %w", err)
	}
	return c, size, nil
}

func (c *csvSource) close() { c.s.close() }

func (c *csvSource) others() []string { return otherNames(c.ocols) }

func (c *csvSource) fill(b *batch) error {
	for {
		err := c.records(b)
		if err != errIncomplete {
			return err
		}
		if c.s.eof {
			return fmt.Errorf("%w: CSV ends inside a record (line %d)", ErrMalformed, c.line)
		}
		ok, err := c.s.fill(MaxRowBytes)
		if err != nil {
			return fmt.Errorf("%w: CSV record on line %d is longer than %d bytes", ErrTooLong, c.line, MaxRowBytes)
		}
		if !ok && c.s.err != io.EOF {
			return fmt.Errorf("read csv: %w", c.s.err)
		}
	}
}

// records parses whole records into b until it is full (once the header
// is known) or the window ends (errIncomplete).
func (c *csvSource) records(b *batch) error {
	win := c.s.win
	for !c.haveHeader || !b.full() {
		p := c.s.pos
		if p >= len(win) {
			if c.s.eof {
				return io.EOF
			}
			return errIncomplete
		}
		next, err := c.record(win, p)
		if err != nil {
			return err
		}
		line := c.line
		c.line += int64(bytes.Count(win[p:next], []byte{'\n'}))
		c.s.pos = next
		blank := true
		for _, f := range c.fields {
			if !isBlank(f) {
				blank = false
				break
			}
		}
		if blank {
			if !c.haveHeader {
				c.delim = 0 // sniff again on the next line
			} else {
				c.blank++
			}
			continue
		}
		if !c.haveHeader {
			if err := c.header(line); err != nil {
				return err
			}
			continue
		}
		c.nrows++
		if c.nrows > c.maxRows {
			return fmt.Errorf("%w: more than %d data rows (line %d)", ErrTooManyRows, c.maxRows, line)
		}
		ri := b.add(line, len(c.ocols))
		b.rows[ri].BlankBefore, c.blank = c.blank, 0
		for k, oc := range c.ocols {
			if oc.Index >= len(c.fields) {
				continue
			}
			v := c.fields[oc.Index]
			if len(v) > MaxCellBytes {
				return fmt.Errorf("%w: line %d: column %q longer than %d bytes", ErrTooLong, line, oc.Name, MaxCellBytes)
			}
			b.setBytes(ri, nFields+k, v)
		}
		for f, col := range c.cols {
			if col < 0 || col >= len(c.fields) {
				continue
			}
			v := c.fields[col]
			if len(v) > MaxCellBytes {
				return fmt.Errorf("%w: line %d: %s longer than %d bytes", ErrTooLong, line, fieldNames[f], MaxCellBytes)
			}
			b.setBytes(ri, f, v)
			if looksScientific(v) {
				if _, ok := number(v); !ok {
					b.inexact(ri, f, v, c.names[f])
				}
			}
		}
	}
	return nil
}

// looksScientific reports text like "1.23457E+18", which is what Excel
// writes to CSV for a long id kept in a numeric column.
func looksScientific(v []byte) bool {
	return len(v) > 2 && len(v) < 32 && bytes.IndexAny(v, "eE") > 0 && v[0] >= '0' && v[0] <= '9'
}

func (c *csvSource) header(line int64) error {
	if c.delim == 0 {
		c.delim = ','
	}
	cells := make([]string, len(c.fields))
	for i, f := range c.fields {
		if len(f) > MaxCellBytes {
			return fmt.Errorf("%w: line %d: header cell longer than %d bytes", ErrTooLong, line, MaxCellBytes)
		}
		if bytes.IndexByte(f, 0) >= 0 {
			return fmt.Errorf("%w: binary content", ErrNotSpreadsheet)
		}
		cells[i] = string(f)
	}
	cols, names, others, err := matchHeaderOthers(cells, c.withOthers)
	if err != nil {
		return fmt.Errorf("line %d: %w", line, err)
	}
	c.cols, c.names, c.ocols, c.haveHeader = cols, names, others, true
	return nil
}

// record splits the record starting at win[p] into c.fields and returns
// the offset after it. Quotes follow RFC 4180, leniently: a quote inside
// an unquoted field is kept, text after a closing quote is kept.
func (c *csvSource) record(win []byte, p int) (int, error) {
	eof := c.s.eof
	if c.delim == 0 && !c.haveHeader {
		c.delim = sniffDelim(win[p:])
	}
	delim := c.delim
	c.fields = c.fields[:0]
	e := bytes.IndexByte(win[p:], '\n')
	end := p + e
	if e < 0 {
		if !eof {
			return 0, errIncomplete
		}
		end = len(win)
	}
	line := win[p:end]
	if bytes.IndexByte(line, '"') < 0 {
		next := end + 1
		if e < 0 {
			next = end
		}
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
		for {
			k := bytes.IndexByte(line, delim)
			if k < 0 {
				c.fields = append(c.fields, line)
				return next, nil
			}
			c.fields = append(c.fields, line[:k])
			line = line[k+1:]
		}
	}
	c.qbuf = c.qbuf[:0]
	i := p
	for {
		if i < len(win) && win[i] == '"' {
			i++
			start := len(c.qbuf)
			for {
				k := bytes.IndexByte(win[i:], '"')
				if k < 0 {
					if !eof {
						return 0, errIncomplete
					}
					return 0, fmt.Errorf("%w: CSV line %d: quoted field is never closed", ErrMalformed, c.line)
				}
				c.qbuf = append(c.qbuf, win[i:i+k]...)
				i += k + 1
				if i >= len(win) && !eof {
					return 0, errIncomplete
				}
				if i < len(win) && win[i] == '"' {
					c.qbuf = append(c.qbuf, '"')
					i++
					continue
				}
				break
			}
			for i < len(win) && win[i] != delim && win[i] != '\n' {
				if win[i] != '\r' || i+1 >= len(win) || win[i+1] != '\n' {
					c.qbuf = append(c.qbuf, win[i])
				}
				i++
			}
			c.fields = append(c.fields, c.qbuf[start:len(c.qbuf):len(c.qbuf)])
		} else {
			j := i
			for j < len(win) && win[j] != delim && win[j] != '\n' {
				j++
			}
			if j >= len(win) && !eof {
				return 0, errIncomplete
			}
			f := win[i:j]
			if j < len(win) && win[j] == '\n' && len(f) > 0 && f[len(f)-1] == '\r' {
				f = f[:len(f)-1]
			}
			c.fields = append(c.fields, f)
			i = j
		}
		if i >= len(win) {
			if !eof {
				return 0, errIncomplete
			}
			return i, nil
		}
		if win[i] == '\n' {
			return i + 1, nil
		}
		i++ // delimiter
	}
}

// sniffDelim picks the delimiter from the first line: a comma unless the
// line has none and has tabs or semicolons (Excel's "Unicode text" and
// European CSV).
func sniffDelim(b []byte) byte {
	if e := bytes.IndexByte(b, '\n'); e >= 0 {
		b = b[:e]
	}
	if bytes.IndexByte(b, ',') >= 0 {
		return ','
	}
	if bytes.IndexByte(b, '\t') >= 0 {
		return '\t'
	}
	if bytes.IndexByte(b, ';') >= 0 {
		return ';'
	}
	return ','
}

// autoDecoder turns the CSV bytes into UTF-8. ASCII passes through; at the
// first non-ASCII byte it looks ahead: valid UTF-8 stays as is, anything
// else is decoded as GB18030 (a superset of GBK, which Excel on Chinese
// Windows writes). A UTF-8 BOM is dropped, and a UTF-16 BOM switches to
// UTF-16.
type autoDecoder struct {
	src     io.Reader
	arr     []byte
	buf     []byte // undecided bytes, within arr
	eof     bool
	started bool
	out     io.Reader // set once decided
}

const sniffAhead = 64 << 10

// newAutoDecoder decodes src, of size bytes.
func newAutoDecoder(src io.Reader, size int64) *autoDecoder {
	arr := make([]byte, max(min(sniffAhead, size+8), 8))
	return &autoDecoder{src: src, arr: arr, buf: arr[:0]}
}

func (d *autoDecoder) Read(p []byte) (int, error) {
	if d.out != nil {
		return d.out.Read(p)
	}
	if !d.started {
		d.started = true
		if err := d.fillTo(3); err != nil {
			return 0, err
		}
		switch {
		case bytes.HasPrefix(d.buf, []byte("\xef\xbb\xbf")):
			d.buf = d.buf[3:]
			d.decide(nil)
			return d.out.Read(p)
		case bytes.HasPrefix(d.buf, []byte("\xff\xfe")), bytes.HasPrefix(d.buf, []byte("\xfe\xff")):
			d.decide(unicode.UTF16(unicode.LittleEndian, unicode.ExpectBOM).NewDecoder())
			return d.out.Read(p)
		}
	}
	if err := d.fillTo(1); err != nil {
		return 0, err
	}
	if len(d.buf) == 0 {
		return 0, io.EOF
	}
	k := 0
	for k < len(d.buf) && d.buf[k] < utf8.RuneSelf {
		k++
	}
	if k > 0 {
		n := copy(p, d.buf[:k])
		d.buf = d.buf[n:]
		return n, nil
	}
	if err := d.fillTo(sniffAhead); err != nil {
		return 0, err
	}
	v := d.buf
	if !d.eof {
		// Ignore a rune cut at the end of the look-ahead.
		for i := 1; i <= utf8.UTFMax && i <= len(v); i++ {
			if utf8.RuneStart(v[len(v)-i]) {
				if !utf8.FullRune(v[len(v)-i:]) {
					v = v[:len(v)-i]
				}
				break
			}
		}
	}
	if utf8.Valid(v) {
		d.decide(nil)
	} else {
		d.decide(simplifiedchinese.GB18030.NewDecoder())
	}
	return d.out.Read(p)
}

// fillTo reads until buf holds n bytes or the input ends.
func (d *autoDecoder) fillTo(n int) error {
	n = min(n, len(d.arr))
	for len(d.buf) < n && !d.eof {
		if len(d.buf) < cap(d.buf) && len(d.buf) == 0 || cap(d.buf) == len(d.buf) {
			m := copy(d.arr, d.buf)
			d.buf = d.arr[:m]
		}
		m, err := d.src.Read(d.buf[len(d.buf):cap(d.buf)])
		d.buf = d.buf[:len(d.buf)+m]
		if err == io.EOF {
			d.eof = true
		} else if err != nil {
			return err
		}
	}
	return nil
}

func (d *autoDecoder) decide(t transform.Transformer) {
	var r io.Reader = io.MultiReader(bytes.NewReader(d.buf), d.src)
	if t != nil {
		r = transform.NewReader(r, t)
	}
	d.buf = nil
	d.out = r
}
