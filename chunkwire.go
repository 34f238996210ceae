package quan

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// ChunkSubject is the bus subject distribution chunks travel on when
// several processes share a task, and ChunkDurable the consumer name they
// share.
const (
	ChunkSubject = "quan.chunks"
	ChunkDurable = "quan-chunks"
)

// MaxRawBytes is the most of a row's user id, as written, that a chunk
// keeps for the failure report: a cell may hold up to 128 KiB of text, and
// a chunk must fit a bus message (1 MiB by default in NATS). Longer text
// is cut at a character boundary and marked with "…".
const MaxRawBytes = 64

// clipRaw cuts s to MaxRawBytes at a character boundary.
func clipRaw(s string) string {
	if len(s) <= MaxRawBytes {
		return s
	}
	cut := MaxRawBytes - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// chunkMagic starts an encoded chunk and names its version.
const chunkMagic = "qc1"

// causeCodes numbers the causes a chunk row may carry on the wire; 0 is
// none. The numbers are part of the wire format: append, never reorder.
var causeCodes = []Cause{"", CauseInvalidID, CauseInexactNumber, CauseDuplicate,
	CauseLimitReached, CauseOutOfStock, CauseTemplateInactive}

// EncodeChunk encodes c for the bus: varints, and a row's text only where
// it is not the decimal of its user id, so 5,000 rows of a valid file take
// about 50 KB.
func EncodeChunk(c *Chunk) ([]byte, error) {
	b := make([]byte, 0, 64+len(c.Owner)+len(c.Rows)*16)
	b = append(b, chunkMagic...)
	b = binary.AppendVarint(b, c.TaskID)
	b = binary.AppendVarint(b, c.Seq)
	b = binary.AppendVarint(b, c.BytesRead)
	b = binary.AppendVarint(b, c.Now.UnixMicro())
	b = binary.AppendUvarint(b, uint64(len(c.Owner)))
	b = append(b, c.Owner...)
	b = binary.AppendUvarint(b, uint64(len(c.Rows)))
	var num []byte
	for _, r := range c.Rows {
		code := -1
		for i, k := range causeCodes {
			if r.Cause == k {
				code = i
				break
			}
		}
		if code < 0 {
			return nil, Errorf(EINVALID, "encode chunk %d of task %d: line %d has an unknown cause %q", c.Seq, c.TaskID, r.Line, r.Cause)
		}
		b = binary.AppendVarint(b, r.Line)
		b = binary.AppendVarint(b, r.UserID)
		num = strconv.AppendInt(num[:0], r.UserID, 10)
		if r.Raw == string(num) {
			b = append(b, byte(code)<<1)
			continue
		}
		b = append(b, byte(code)<<1|1)
		b = binary.AppendUvarint(b, uint64(len(r.Raw)))
		b = append(b, r.Raw...)
	}
	return b, nil
}

// DecodeChunk decodes what EncodeChunk encoded. Anything else is an
// invalid error that says where it went wrong.
func DecodeChunk(b []byte) (*Chunk, error) {
	d := wireDecoder{of: "chunk", b: b}
	if len(b) < len(chunkMagic) || string(b[:len(chunkMagic)]) != chunkMagic {
		return nil, Errorf(EINVALID, "decode chunk: not a chunk of this version (want %q first)", chunkMagic)
	}
	d.off = len(chunkMagic)
	c := &Chunk{
		TaskID:    d.varint("task"),
		Seq:       d.varint("seq"),
		BytesRead: d.varint("bytes read"),
	}
	c.Now = time.UnixMicro(d.varint("time")).UTC()
	c.Owner = d.text("owner")
	n := d.uvarint("row count")
	if d.err == nil && n > uint64(len(b)) { // every row takes at least 3 bytes
		d.fail("row count %d exceeds the message", n)
	}
	if d.err != nil {
		return nil, d.err
	}
	c.Rows = make([]ChunkRow, n)
	for i := range c.Rows {
		r := &c.Rows[i]
		r.Line = d.varint("line")
		r.UserID = d.varint("user id")
		flags := d.byte("cause")
		if d.err != nil {
			return nil, d.err
		}
		code := int(flags >> 1)
		if code >= len(causeCodes) {
			return nil, Errorf(EINVALID, "decode chunk: row %d has an unknown cause code %d", i+1, code)
		}
		r.Cause = causeCodes[code]
		if flags&1 == 1 {
			r.Raw = d.text("user id text")
		} else {
			r.Raw = strconv.FormatInt(r.UserID, 10)
		}
		if d.err != nil {
			return nil, d.err
		}
	}
	if d.off != len(b) {
		return nil, Errorf(EINVALID, "decode chunk: %d bytes after the last row", len(b)-d.off)
	}
	return c, nil
}

// wireDecoder reads the bytes, varints and texts of a bus message
// (chunks, claims), remembering the first error.
type wireDecoder struct {
	of  string // what the message holds, for errors: "chunk", "claims"
	b   []byte
	off int
	err error
}

func (d *wireDecoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = Errorf(EINVALID, "decode %s at byte %d: %s", d.of, d.off, fmt.Sprintf(format, args...))
	}
}

func (d *wireDecoder) varint(what string) int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b[d.off:])
	if n <= 0 {
		d.fail("bad %s", what)
		return 0
	}
	d.off += n
	return v
}

func (d *wireDecoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.fail("bad %s", what)
		return 0
	}
	d.off += n
	return v
}

func (d *wireDecoder) byte(what string) byte {
	if d.err != nil {
		return 0
	}
	if d.off >= len(d.b) {
		d.fail("missing %s", what)
		return 0
	}
	d.off++
	return d.b[d.off-1]
}

func (d *wireDecoder) text(what string) string {
	n := d.uvarint(what + " length")
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)-d.off) {
		d.fail("%s of %d bytes exceeds the message", what, n)
		return ""
	}
	s := string(d.b[d.off : d.off+int(n)])
	d.off += int(n)
	return s
}
