package quan_test

import (
	"errors"
	"reflect"
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

func FuzzDecodeChunk(f *testing.F) {
	b, _ := quan.EncodeChunk(&quan.Chunk{TaskID: 1, Seq: 1, Rows: []quan.ChunkRow{{Line: 2, UserID: 3, Raw: "x3"}}})
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
