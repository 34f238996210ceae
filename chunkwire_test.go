package quan_test

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quanhq/quan"
)

func TestChunkWireRoundTrip(t *testing.T) {
	c := &quan.Chunk{
		TaskID: 7, Seq: 42, Owner: "host-1-ab", BytesRead: 1 << 33,
		Now: time.Date(2030, 1, 2, 3, 4, 5, 6000, time.UTC),
		Rows: []quan.ChunkRow{
			{Line: 2, UserID: 1000000000000000001, Raw: "1000000000000000001"},
			{Line: 3, UserID: 5, Raw: " 0005 "}, // text that is not the plain decimal
			{Line: 4, Raw: "abc", Cause: quan.CauseInvalidID},
			{Line: 5, Raw: "1.2E+19", Cause: quan.CauseInexactNumber},
			{Line: 6, UserID: 5, Raw: "5", Cause: quan.CauseDuplicate},
			{Line: 7, UserID: 9, Raw: "9", Cause: quan.CauseLimitReached},
			{Line: 8, UserID: 10, Raw: "10", Cause: quan.CauseOutOfStock},
			{Line: 9, UserID: 11, Raw: "用户", Cause: quan.CauseTemplateInactive},
			{Line: 10, Raw: "", Cause: quan.CauseInvalidID},
		},
	}
	b, err := quan.EncodeChunk(c)
	if err != nil {
		t.Fatal(err)
	}
	got, err := quan.DecodeChunk(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, c) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, c)
	}
	// Every cut of the message is refused with a message, never a panic.
	for i := range len(b) {
		if _, err := quan.DecodeChunk(b[:i]); !errors.Is(err, quan.ErrInvalid) {
			t.Fatalf("decoding the first %d of %d bytes: %v, want invalid", i, len(b), err)
		}
	}
	if _, err := quan.DecodeChunk(append(b, 0)); !errors.Is(err, quan.ErrInvalid) {
		t.Errorf("a trailing byte: %v, want invalid", err)
	}
	bad := *c
	bad.Rows = []quan.ChunkRow{{Line: 2, Cause: "bogus"}}
	if _, err := quan.EncodeChunk(&bad); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("an unknown cause: %v, want an error naming it", err)
	}
}

// TestChunkWireContacts: rows carry their phone and mail over the bus,
// and a chunk without any is encoded as before contacts travelled, so that
// consumers of the first version still read it.
func TestChunkWireContacts(t *testing.T) {
	c := &quan.Chunk{TaskID: 7, Seq: 1, Now: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC), Rows: []quan.ChunkRow{
		{Line: 2, UserID: 1, Raw: "1", Contact: &quan.RowContact{Phone: "13812345678", Mail: "a@example.com"}},
		{Line: 3, UserID: 2, Raw: " 2", Contact: &quan.RowContact{Phone: "+86 139-0000-0000"}},
		{Line: 4, UserID: 3, Raw: "3", Contact: &quan.RowContact{Mail: "李@例子.中国"}},
		{Line: 5, UserID: 4, Raw: "4"},
		{Line: 6, UserID: 4, Raw: "4", Cause: quan.CauseDuplicate},
	}}
	b, err := quan.EncodeChunk(c)
	if err != nil {
		t.Fatal(err)
	}
	if string(b[:3]) != "qc2" {
		t.Errorf("a chunk with contacts starts %q, want qc2", b[:3])
	}
	got, err := quan.DecodeChunk(b)
	if err != nil || !reflect.DeepEqual(got, c) {
		t.Fatalf("round trip: %+v, %v\nwant %+v", got, err, c)
	}
	for i := range len(b) {
		if _, err := quan.DecodeChunk(b[:i]); !errors.Is(err, quan.ErrInvalid) {
			t.Fatalf("decoding the first %d of %d bytes: %v, want invalid", i, len(b), err)
		}
	}

	plain := *c
	plain.Rows = []quan.ChunkRow{{Line: 2, UserID: 1, Raw: "1"}, {Line: 3, UserID: 2, Raw: "x"}}
	v1, err := quan.EncodeChunk(&plain)
	if err != nil {
		t.Fatal(err)
	}
	// The rows end the message as version 1 wrote them: the count, then
	// line, user and flags (and the text) of each.
	if tail := []byte{2, 4, 2, 0, 6, 4, 1, 1, 'x'}; string(v1[:3]) != "qc1" || !bytes.HasSuffix(v1, tail) {
		t.Errorf("a chunk without contacts: % x, want qc1 … % x", v1, tail)
	}
	// A version 1 chunk whose row claims a contact is refused.
	bad := slices.Clone(v1)
	bad[len(bad)-6] |= 1 << 4
	if _, err := quan.DecodeChunk(bad); !errors.Is(err, quan.ErrInvalid) {
		t.Errorf("a qc1 row with a phone flag: %v, want invalid", err)
	}
}

func TestClipContact(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{" 13812345678\t", "13812345678"},
		{strings.Repeat("1", 254), strings.Repeat("1", 254)},
		{strings.Repeat("1", 300), strings.Repeat("1", 251) + "…"},
		{strings.Repeat("邮", 100), strings.Repeat("邮", 83) + "…"},
	} {
		if got := quan.ClipContact(c.in); got != c.want {
			t.Errorf("ClipContact(%q) = %q, want %q", c.in, got, c.want)
		}
		if _, problem := quan.PickContact(quan.NotifySMS, quan.ClipContact(c.in)); len(c.in) > 254 && problem != quan.InvalidContact {
			t.Errorf("a clipped phone is %q, want invalid_contact", problem)
		}
	}
}

func FuzzDecodeChunk(f *testing.F) {
	b, _ := quan.EncodeChunk(&quan.Chunk{TaskID: 1, Seq: 1, Rows: []quan.ChunkRow{{Line: 2, UserID: 3, Raw: "x3"}}})
	f.Add(b)
	b, _ = quan.EncodeChunk(&quan.Chunk{TaskID: 1, Seq: 1, Rows: []quan.ChunkRow{{Line: 2, UserID: 3, Raw: "3", Contact: &quan.RowContact{Phone: "138", Mail: "a@b.cn"}}}})
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := quan.DecodeChunk(b)
		if err != nil {
			return
		}
		again, err := quan.EncodeChunk(c)
		if err != nil {
			t.Fatalf("a decoded chunk does not encode: %v", err)
		}
		if _, err := quan.DecodeChunk(again); err != nil {
			t.Fatalf("a re-encoded chunk does not decode: %v", err)
		}
	})
}
