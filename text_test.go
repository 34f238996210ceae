package quan

import (
	"strings"
	"testing"
	"time"
)

// TestTextProblem: what text quan keeps, as every front and store sees
// it: UTF-8 (a U+FFFD sent as such is a character like any other), no
// control character but those allowed, no bidirectional override.
func TestTextProblem(t *testing.T) {
	for _, tc := range []struct {
		s, allowed string
		want       string // a part of the problem; "" for none
	}{
		{"满100减10 🎟", "", ""},
		{"a\uFFFDb", "", ""},
		{"", "", ""},
		{"a\xffb", "", "not valid UTF-8 (byte 0xff at 1)"},
		{"a\xed\xa0\x80", "", "not valid UTF-8"},
		{"a\x00b", "", "U+0000"},
		{"a\tb", "", "U+0009"},
		{"a\tb\nc", "\n\t", ""},
		{"a\rb", "\n\t", "U+000D: no control or bidirectional formatting characters other than line feed and tab"},
		{"a\x7f", "", "U+007F"},
		{"a\u0085", "", "U+0085"},
		{"a\u202Eb", "", "U+202E"},
		{"a\u2066b", "\n", "U+2066"},
	} {
		got := TextProblem(tc.s, tc.allowed)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("TextProblem(%q, %q) = %q, want %q", tc.s, tc.allowed, got, tc.want)
		}
	}
}

// TestTimeProblem: times from 0001-01-01 to 9999-12-31 in UTC, whatever
// the zone they are given in.
func TestTimeProblem(t *testing.T) {
	west := time.FixedZone("", -8*3600)
	east := time.FixedZone("", 8*3600)
	for _, tc := range []struct {
		t  time.Time
		ok bool
	}{
		{time.Time{}, true},
		{time.Date(2026, 11, 11, 0, 0, 0, 0, time.UTC), true},
		{time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), true},
		{time.Date(9999, 12, 31, 15, 59, 59, 0, west), true},
		{time.Date(9999, 12, 31, 16, 0, 0, 0, west), false},
		{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), false},
		{time.Date(1, 1, 1, 7, 59, 59, 0, east), false},
		{time.Date(0, 12, 31, 23, 59, 59, 0, time.UTC), false},
		{time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC), false},
	} {
		if got := TimeProblem(tc.t); (got == "") != tc.ok {
			t.Errorf("TimeProblem(%s) = %q, want ok %v", formatAnyTime(tc.t), got, tc.ok)
		}
	}
}
