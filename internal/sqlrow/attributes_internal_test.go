package sqlrow

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestDecodeTags: the hand-split fast path decodes what encoding/json
// does, and leaves to it whatever it does not split.
func TestDecodeTags(t *testing.T) {
	for _, tags := range [][]string{
		{}, {"vip"}, {"vip", "new"}, {"a", "b", "c"}, {""}, {"", "x"}, {`x","y`}, {`quote"d`}, {"back\\slash"},
		{"with space"}, {"会员", "上海"}, {"<b>&"}, {"tab\t"}, {"[", "]"}, {","}, {`","`},
	} {
		b, err := json.Marshal(tags)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeTags(b)
		if err != nil || got == nil || !slices.Equal(got, tags) {
			t.Errorf("decodeTags(%s) = %q, %v; want %q", b, got, err, tags)
		}
	}
	// MySQL's JSON type prints a space after each comma.
	if got, err := decodeTags([]byte(`["a", "b"]`)); err != nil || !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf(`decodeTags(["a", "b"]) = %q, %v`, got, err)
	}
	if _, err := decodeTags([]byte(`["a",`)); err == nil {
		t.Error("decodeTags of a cut array: no error")
	}
	for _, b := range []string{"{}", "null"} {
		if got, err := decodeAttrs([]byte(b)); err != nil || got != nil {
			t.Errorf("decodeAttrs(%s) = %v, %v; want nil", b, got, err)
		}
	}
	if got, err := decodeAttrs([]byte(`{"city":"上海"}`)); err != nil || got["city"] != "上海" {
		t.Errorf("decodeAttrs = %v, %v", got, err)
	}
}
