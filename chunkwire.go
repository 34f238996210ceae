package quan

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
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

// ClipRaw cuts s to MaxRawBytes at a character boundary.
func ClipRaw(s string) string { return ClipText(s, MaxRawBytes) }

// ClipText returns s if it has at most n bytes, else its longest prefix
// that ends at a character boundary and leaves room for "…", which it
// ends with: n bytes at most either way (n ≥ 3).
func ClipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// MaxContactBytes is the most of a row's phone or mail column, as
// written, that a chunk keeps: no valid address is longer (a mail address
// is at most 254 bytes), so a longer cell is kept cut and marked with "…",
// which no address contains: it stays invalid_contact, and a 128 KiB cell
// costs a chunk no more than a real address.
const MaxContactBytes = 254

// ClipContact trims the white space around s and cuts it to
// MaxContactBytes at a character boundary, ending it with "…".
func ClipContact(s string) string {
	return ClipText(strings.TrimSpace(s), MaxContactBytes)
}

// Chunk versions: the first three bytes of an encoded chunk. A chunk none
// of whose rows carries a contact is encoded as version 1, byte for byte
// as before contacts travelled; one that does is version 2, which a
// consumer of version 1 refuses by its first bytes rather than misread.
const (
	chunkMagic   = "qc1"
	chunkMagicV2 = "qc2" // rows may carry phone and mail (flagPhone, flagMail)
)

// A row's flags byte: bit 0 says its user id text follows; bits 1–3 are
// its cause code (causeCodes, at most 7); in version 2, bits 4 and 5 say
// its phone and its mail follow, in that order.
const (
	flagRaw   = 1 << 0
	flagPhone = 1 << 4
	flagMail  = 1 << 5
	codeMask  = 7
)

// causeCodes numbers the causes a chunk row may carry on the wire; 0 is
// none. The numbers are part of the wire format: append, never reorder.
var causeCodes = []Cause{"", CauseInvalidID, CauseInexactNumber, CauseDuplicate,
	CauseLimitReached, CauseOutOfStock, CauseTemplateInactive}

// EncodeChunk encodes c for the bus: varints, and a row's text only where
// it is not the decimal of its user id, so 5,000 rows of a valid file take
// about 50 KB; a row's phone and mail only where they are not blank (a
// chunk of a task that notifies by SMS or email).
func EncodeChunk(c *Chunk) ([]byte, error) {
	magic, extra := chunkMagic, 0
	for _, r := range c.Rows {
		if k := r.contact(); k != (RowContact{}) {
			magic = chunkMagicV2
			extra += 2 + len(k.Phone) + len(k.Mail)
		}
	}
	b := make([]byte, 0, 64+len(c.Owner)+len(c.Rows)*16+extra)
	b = append(b, magic...)
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
		flags := byte(code) << 1
		num = strconv.AppendInt(num[:0], r.UserID, 10)
		raw := r.Raw != string(num)
		if raw {
			flags |= flagRaw
		}
		k := r.contact()
		if k.Phone != "" {
			flags |= flagPhone
		}
		if k.Mail != "" {
			flags |= flagMail
		}
		b = append(b, flags)
		for _, s := range [...]struct {
			on   bool
			text string
		}{{raw, r.Raw}, {k.Phone != "", k.Phone}, {k.Mail != "", k.Mail}} {
			if s.on {
				b = binary.AppendUvarint(b, uint64(len(s.text)))
				b = append(b, s.text...)
			}
		}
	}
	return b, nil
}

// DecodeChunk decodes what EncodeChunk encoded. Anything else is an
// invalid error that says where it went wrong.
func DecodeChunk(b []byte) (*Chunk, error) {
	d := wireDecoder{of: "chunk", b: b}
	var v2 bool
	switch {
	case len(b) >= len(chunkMagic) && string(b[:len(chunkMagic)]) == chunkMagic:
	case len(b) >= len(chunkMagicV2) && string(b[:len(chunkMagicV2)]) == chunkMagicV2:
		v2 = true
	default:
		return nil, Errorf(EINVALID, "decode chunk: not a chunk of a known version (want %q or %q first)", chunkMagic, chunkMagicV2)
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
		if !v2 && flags&(flagPhone|flagMail) != 0 || flags&^(flagRaw|codeMask<<1|flagPhone|flagMail) != 0 {
			return nil, Errorf(EINVALID, "decode chunk: row %d has unknown flags %#x", i+1, flags)
		}
		code := int(flags>>1) & codeMask
		if code >= len(causeCodes) {
			return nil, Errorf(EINVALID, "decode chunk: row %d has an unknown cause code %d", i+1, code)
		}
		r.Cause = causeCodes[code]
		if flags&flagRaw != 0 {
			r.Raw = d.text("user id text")
		} else {
			r.Raw = strconv.FormatInt(r.UserID, 10)
		}
		if flags&(flagPhone|flagMail) != 0 {
			r.Contact = &RowContact{}
			if flags&flagPhone != 0 {
				r.Contact.Phone = d.text("phone")
			}
			if flags&flagMail != 0 {
				r.Contact.Mail = d.text("mail")
			}
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
