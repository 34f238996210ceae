package facts

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/quanhq/quan"
)

func TestFactColumns(t *testing.T) {
	for _, tt := range []struct {
		name   string
		header []string
		err    string
	}{
		{"OK", []string{"Level", "TAGS", "registered_at", "Region", "orders", "vip", "城市"}, ""},
		{"OKChinese", []string{"会员等级", "标签", "注册时间", "地区", "订单数"}, ""},
		{"ErrFactTwice", []string{"level", "会员等级"}, `columns "level" and "会员等级" name the same fact`},
		{"ErrAttrTwice", []string{"vip", "vip"}, `two columns are named "vip"`},
		{"ErrAttrLong", []string{strings.Repeat("n", quan.MaxFactBytes+1)}, "an attribute's name is at most 64 bytes"},
		{"ErrTooManyAttrs", func() []string {
			var h []string
			for i := range quan.MaxUserAttrs + 1 {
				h = append(h, "a"+strings.Repeat("x", i))
			}
			return h
		}(), "51 attribute columns"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := newFactColumns(tt.header)
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("newFactColumns = %v, want %q", err, tt.err)
			}
		})
	}
}

func TestParseFactsRow(t *testing.T) {
	cols, err := newFactColumns([]string{"level", "tags", "registeredAt", "region", "orders", "vip"})
	if err != nil {
		t.Fatal(err)
	}
	row := func(id string, cells ...string) quan.FileRow {
		return quan.FileRow{Line: 2, UserID: id, Others: append(cells, make([]string, 6-len(cells))...)}
	}
	for _, tt := range []struct {
		name   string
		row    quan.FileRow
		want   string // %+v of the facts, for a row that passes
		reason string
		field  string
	}{
		{"OKAll", row(" 7 ", "2", "vip| new ,vip,", "2024-01-02 15:04", "上海", "3", "gold"),
			"7 2 [vip new] 2024-01-02 07:04:00 +0000 UTC 上海 3 map[vip:gold]", "", ""},
		{"OKBlank", row("8"), "8 0 [] 0001-01-01 00:00:00 +0000 UTC  0 map[]", "", ""},
		{"ErrID", row("x", "2"), "", quan.ImportInvalidID, ""},
		{"ErrLevel", row("7", "gold"), "", ImportInvalidAttribute, "level"},
		{"ErrOrdersNegative", row("7", "", "", "", "", "-1"), "", ImportInvalidAttribute, "orders"},
		{"ErrTime", row("7", "", "", "yesterday"), "", ImportInvalidAttribute, "registeredAt"},
		{"ErrTagLong", row("7", "", "ok|"+strings.Repeat("t", 65)), "", ImportInvalidAttribute, "tags"},
		{"ErrTooManyTags", row("7", "", manyTags(quan.MaxUserTags+1)), "", ImportInvalidAttribute, "tags"},
		{"ErrRegionLong", row("7", "", "", "", strings.Repeat("r", 65)), "", ImportInvalidAttribute, "region"},
		{"ErrAttrLong", row("7", "", "", "", "", "", strings.Repeat("g", 65)), "", ImportInvalidAttribute, "vip"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, user, fail := cols.parse(tt.row)
			if tt.reason == "" {
				if fail != nil {
					t.Fatalf("failed: %+v", fail)
				}
				got := fmt.Sprintf("%d %d %v %v %s %d %v", f.UserID, f.Level, f.Tags, f.RegisteredAt, f.Region, f.Orders, f.Attrs)
				if got != tt.want || user != f.UserID {
					t.Errorf("facts %s (user %d)\nwant  %s", got, user, tt.want)
				}
				return
			}
			if fail == nil || fail.Reason != tt.reason || fail.Field != tt.field || fail.Message == "" {
				t.Errorf("failure %+v, want %s (%s)", fail, tt.reason, tt.field)
			}
			if tt.reason == ImportInvalidAttribute && user != 7 {
				t.Errorf("user %d: a row with a good id claims its user", user)
			}
		})
	}
}

func TestParseFactTime(t *testing.T) {
	cst := time.FixedZone("", 8*3600)
	for _, tt := range []struct {
		in   string
		want time.Time
	}{
		{"2024-01-02T03:04:05Z", time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)},
		{"2024-01-02T03:04:05.5+09:00", time.Date(2024, 1, 2, 3, 4, 5, 5e8, time.FixedZone("", 9*3600))},
		{"2024-01-02", time.Date(2024, 1, 2, 0, 0, 0, 0, cst)},
		{"2024-01-02 15:04", time.Date(2024, 1, 2, 15, 4, 0, 0, cst)},
		{"2024-01-02 15:04:05", time.Date(2024, 1, 2, 15, 4, 5, 0, cst)},
		{"45293", time.Date(2024, 1, 2, 0, 0, 0, 0, cst)},    // an Excel date cell
		{"45293.5", time.Date(2024, 1, 2, 12, 0, 0, 0, cst)}, // and time
		{"2024", time.Time{}}, // a year is no Excel date from 1970 on
		{"2024/01/02", time.Time{}},
		{"tomorrow", time.Time{}},
	} {
		got, err := parseFactTime(tt.in)
		switch {
		case tt.want.IsZero() && err == nil:
			t.Errorf("parseFactTime(%q) = %v, want an error", tt.in, got)
		case !tt.want.IsZero() && (err != nil || !got.Equal(tt.want)):
			t.Errorf("parseFactTime(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

// manyTags is n distinct tags separated by |.
func manyTags(n int) string {
	tags := make([]string, n)
	for i := range tags {
		tags[i] = fmt.Sprint("t", i)
	}
	return strings.Join(tags, "|")
}
