package facts

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/userfile"
)

// Limits of an attributes import.
const (
	// ImportBatch is how many rows of an attributes import go to
	// the store in one transaction.
	ImportBatch = 1000
	// DefaultMaxRows is the most data rows an attributes file
	// may hold when Service.MaxImportRows is 0.
	DefaultMaxRows = 1_000_000
)

// ImportInvalidAttribute is why a row of an attributes import fails when
// one of its facts is not one: Field names the column as the header
// writes it.
const ImportInvalidAttribute = "invalid_attribute"

var attributeImportReasons = []string{quan.ImportInvalidID, ImportInvalidAttribute, quan.ImportDuplicateInFile}

// factColumn is what a column of an attributes file holds.
type factColumn int

const (
	colAttr factColumn = iota // any column not named below: attrs[name]
	colLevel
	colTags
	colRegisteredAt
	colRegion
	colOrders
)

// factHeaders are the header names of the known facts, lowered, without
// spaces, underscores or hyphens.
var factHeaders = map[string]factColumn{
	"level": colLevel, "memberlevel": colLevel, "会员等级": colLevel, "等级": colLevel,
	"tags": colTags, "标签": colTags,
	"registeredat": colRegisteredAt, "注册时间": colRegisteredAt,
	"region": colRegion, "地区": colRegion,
	"orders": colOrders, "订单数": colOrders,
}

// factColumns are the columns of an attributes file besides the user id.
type factColumns struct {
	kinds []factColumn
	names []string // as the header writes them: attrs keys, and Field of failures
}

// newFactColumns reads the header's other columns: the known facts by
// name in any case, each at most once, and at most MaxUserAttrs others,
// named uniquely, as attrs. An error says what is wrong with the header.
func newFactColumns(names []string) (*factColumns, error) {
	c := &factColumns{kinds: make([]factColumn, len(names)), names: names}
	known := map[factColumn]string{}
	attrs := map[string]bool{}
	for i, name := range names {
		key := strings.ToLower(strings.NewReplacer(" ", "", "_", "", "-", "").Replace(name))
		if k, ok := factHeaders[key]; ok {
			if prev, dup := known[k]; dup {
				return nil, fmt.Errorf("columns %q and %q name the same fact: keep one", prev, name)
			}
			known[k], c.kinds[i] = name, k
			continue
		}
		switch {
		case len(name) > quan.MaxFactBytes:
			return nil, fmt.Errorf("column %q: an attribute's name is at most %d bytes", quan.ClipRaw(name), quan.MaxFactBytes)
		case !utf8.ValidString(name):
			return nil, fmt.Errorf("column %q: the name is not valid UTF-8", name)
		case attrs[name]:
			return nil, fmt.Errorf("two columns are named %q: an attribute is one column", name)
		}
		attrs[name] = true
	}
	if len(attrs) > quan.MaxUserAttrs {
		return nil, fmt.Errorf("%d attribute columns besides userId, level, tags, registeredAt, region and orders: at most %d", len(attrs), quan.MaxUserAttrs)
	}
	return c, nil
}

// parse checks one row of an attributes file: the user's facts, which
// replace those on file. A blank cell is a fact unknown: level and orders
// 0, no tags, no registration time, no region, the attribute absent. A
// row whose user id is good is returned with its user even when a fact is
// not, so that it claims the user against later rows.
func (c *factColumns) parse(fr quan.FileRow) (quan.UserFacts, int64, *quan.ImportFailure) {
	id, fail := userfile.UserID(fr)
	if fail != nil {
		return quan.UserFacts{}, 0, fail
	}
	f := quan.UserFacts{UserID: id}
	bad := func(col int, format string, args ...any) (quan.UserFacts, int64, *quan.ImportFailure) {
		return f, id, &quan.ImportFailure{Reason: ImportInvalidAttribute, Field: c.names[col], Message: fmt.Sprintf(format, args...)}
	}
	for i, kind := range c.kinds {
		if i >= len(fr.Others) {
			break
		}
		v := strings.TrimSpace(fr.Others[i])
		if v == "" {
			continue
		}
		var err error
		switch kind {
		case colLevel, colOrders:
			n, perr := strconv.ParseInt(v, 10, 64)
			switch {
			case perr != nil:
				return bad(i, "%q is not a whole number", quan.ClipRaw(v))
			case n < 0:
				return bad(i, "%d is negative: 0 or more", n)
			case kind == colLevel:
				f.Level = n
			default:
				f.Orders = n
			}
		case colTags:
			f.Tags = strings.FieldsFunc(v, func(r rune) bool { return r == '|' || r == ',' })
			for j := range f.Tags {
				f.Tags[j] = strings.TrimSpace(f.Tags[j])
			}
		case colRegisteredAt:
			if f.RegisteredAt, err = parseFactTime(v); err != nil {
				return bad(i, "%q: %v", quan.ClipRaw(v), err)
			}
		case colRegion:
			f.Region = v
		default:
			if f.Attrs == nil {
				f.Attrs = make(map[string]string, len(c.kinds))
			}
			f.Attrs[c.names[i]] = v
		}
	}
	f.Normalize()
	// What is left to check: the tags' number and sizes, the lengths of
	// the region and the attributes' values.
	if err := f.Validate(); err != nil {
		fe := err.(*quan.Error).Fields[0]
		for i, kind := range c.kinds {
			switch {
			case kind == colTags && strings.HasPrefix(fe.Field, "tags"):
				tag := strings.TrimPrefix(fe.Field, "tags")
				if tag != "" { // "[3]": name the tag
					n, _ := strconv.Atoi(strings.Trim(tag, "[]"))
					return bad(i, "tag %q %s", quan.ClipRaw(f.Tags[n]), fe.Message)
				}
				return bad(i, "%s (separate tags with | or ,)", fe.Message)
			case kind == colRegion && fe.Field == "region",
				kind == colAttr && fe.Field == "attrs."+c.names[i]:
				return bad(i, "%s", fe.Message)
			}
		}
		return f, id, &quan.ImportFailure{Reason: ImportInvalidAttribute, Field: fe.Field, Message: fe.Message}
	}
	return f, id, nil
}

// factTimeLayouts are the forms of a registration time besides RFC 3339,
// read in China's time.
var factTimeLayouts = []string{"2006-01-02", "2006-01-02 15:04", "2006-01-02 15:04:05"}

// Excel's dates are days since 1899-12-30; a number from excelFrom
// (1970-01-01) on is taken as one, anything smaller as a mistake.
const (
	excelFrom = 25569
	excelTo   = 2958466 // 10000-01-01
)

// parseFactTime reads a registration time: RFC 3339, 2006-01-02 with an
// optional 15:04 or 15:04:05 in Asia/Shanghai, or an Excel date cell (a
// number of days, in Asia/Shanghai as well).
func parseFactTime(v string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	for _, l := range factTimeLayouts {
		if t, err := time.ParseInLocation(l, v, quan.ChinaTime); err == nil {
			return t, nil
		}
	}
	if d, err := strconv.ParseFloat(v, 64); err == nil && d >= excelFrom && d < excelTo {
		days := math.Floor(d)
		at := time.Date(1899, 12, 30, 0, 0, 0, 0, quan.ChinaTime).AddDate(0, 0, int(days))
		return at.Add(time.Duration(math.Round((d-days)*86400)) * time.Second), nil
	}
	return time.Time{}, fmt.Errorf("not a time: write 2006-01-02, 2006-01-02 15:04[:05] (China time) or RFC 3339")
}
