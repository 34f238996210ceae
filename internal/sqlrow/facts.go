package sqlrow

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/quanhq/quan"
)

// FactsColumns are the columns of user_facts a store reads, in
// scanFactsRow's order (updated_at is written, never read).
//
// Tags and attrs are JSON text, an array of strings and an object of
// strings: both engines check it (SQLite's json_valid in a CHECK, MySQL's
// JSON type), an operator reads it in any SQL client, and a segment may
// later narrow a scan in SQL (json_each, JSON_CONTAINS). A made-up
// compact encoding would save a few bytes a user and lose all three.
const FactsColumns = `user_id, level, tags, registered_at, region, orders, attrs`

// factsBatch is how many users one query of FactsOf names.
const factsBatch = 1000

// FactsOf reads the facts of users through q, factsBatch users a query
// along the primary key; a user with none on file is missing from the map.
//
// The facts are what the hot path's facts cache keeps, for many users at
// once, so they are made cheap for the garbage collector to keep: the
// users of a query share one allocation, and equal tags one string.
func FactsOf(ctx context.Context, q Queryer, users []int64) (map[int64]*quan.UserFacts, error) {
	out := make(map[int64]*quan.UserFacts, len(users))
	tags := map[string]string{}
	for start := 0; start < len(users); start += factsBatch {
		part := users[start:min(start+factsBatch, len(users))]
		fs, err := queryFacts(ctx, q, len(part), scanFactsRow,
			`SELECT `+FactsColumns+` FROM user_facts WHERE user_id IN (`+Params(len(part))+`)`, Args(nil, part)[1:]...)
		if err != nil {
			return nil, err
		}
		for i := range fs {
			f := &fs[i]
			for j, t := range f.Tags {
				if s, ok := tags[t]; ok {
					f.Tags[j] = s
				} else {
					tags[t] = t
				}
			}
			out[f.UserID] = f
		}
	}
	return out, nil
}

// FactsDialect is how an engine states the conditions of a
// quan.FactsFilter that SQL has no common words for.
type FactsDialect struct {
	// RegionIs is a condition on the row that is true when its region is
	// the string bound to its one parameter, byte for byte (no collation
	// that pads or folds).
	RegionIs string
	// HasTag returns a condition on the row that is true when its tags
	// hold tag, and its arguments; false if the engine cannot state that
	// exactly (a clause with such a condition is left out of the scan's
	// WHERE, which then returns more users: the contract allows it).
	HasTag func(tag string) (cond string, args []any, ok bool)
}

// ScanFactsAfter reads the facts of at most limit users above after who
// pass filter, in user id order: a range of the primary key. It selects
// only the columns filter.Read names and states filter.Where in SQL
// (factsWhere). A segment reads every user through it, so it decodes
// the facts without a pointer per user and the common tags and attrs
// without encoding/json (decodeTags, decodeAttrs).
func ScanFactsAfter(ctx context.Context, q Queryer, d FactsDialect, after int64, limit int, filter quan.FactsFilter) ([]quan.UserFacts, error) {
	if limit <= 0 {
		return nil, nil
	}
	cols, scan := factsScanner(filter.Read)
	where, args := factsWhere(filter.Where, d)
	return queryFacts(ctx, q, min(limit, 10_000), scan,
		`SELECT `+cols+` FROM user_facts WHERE user_id > ?`+where+` ORDER BY user_id LIMIT ?`,
		append(append([]any{after}, args...), limit)...)
}

// queryFacts runs query through q and reads its rows with scan into one
// slice made for n of them (a segment's batch, a cache's users: read
// without growing, kept in one allocation).
func queryFacts(ctx context.Context, q Queryer, n int, scan func(Scanner) (quan.UserFacts, error), query string, args ...any) ([]quan.UserFacts, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("read user facts: %w", err)
	}
	defer rows.Close()
	out := make([]quan.UserFacts, 0, n)
	for rows.Next() {
		f, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("read user facts: %w", err)
		}
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read user facts: %w", err)
	}
	return out, nil
}

// factsScanner returns the columns of user_facts that hold the user id
// and the facts of read, and a function that reads a row of them
// (RawBytes are valid until the next row: they are decoded there).
func factsScanner(read quan.FactFields) (string, func(Scanner) (quan.UserFacts, error)) {
	if read&quan.AllFacts == quan.AllFacts {
		return FactsColumns, scanFactsRow
	}
	cols := "user_id"
	pick := func(f quan.FactFields, col string) bool {
		if read&f == 0 {
			return false
		}
		cols += ", " + col
		return true
	}
	level, tags, reg := pick(quan.FactLevel, "level"), pick(quan.FactTags, "tags"), pick(quan.FactRegisteredAt, "registered_at")
	region, orders, attrs := pick(quan.FactRegion, "region"), pick(quan.FactOrders, "orders"), pick(quan.FactAttrs, "attrs")
	// One set of destinations for the query's rows: they are read one
	// after another, and each row's values are copied out.
	var (
		f                 quan.UserFacts
		rawTags, rawAttrs sql.RawBytes
		dest              = []any{&f.UserID}
	)
	if level {
		dest = append(dest, &f.Level)
	}
	if tags {
		dest = append(dest, &rawTags)
	}
	if reg {
		dest = append(dest, NullTime(&f.RegisteredAt))
	}
	if region {
		dest = append(dest, &f.Region)
	}
	if orders {
		dest = append(dest, &f.Orders)
	}
	if attrs {
		dest = append(dest, &rawAttrs)
	}
	if !tags {
		rawTags = sql.RawBytes("[]")
	}
	return cols, func(row Scanner) (quan.UserFacts, error) {
		if err := row.Scan(dest...); err != nil {
			return quan.UserFacts{}, err
		}
		out := f
		return out, decodeFacts(&out, rawTags, rawAttrs)
	}
}

// factsWhere is filter's clauses as SQL to follow a WHERE condition ("
// AND (level >= ?) AND (…)"), and their arguments. A clause with a
// condition SQL cannot state exactly (a FactCond of a form it does not
// allow; a tag d.HasTag refuses) is left out.
func factsWhere(clauses []quan.FactsClause, d FactsDialect) (string, []any) {
	var (
		b    strings.Builder
		args []any
	)
clauses:
	for _, c := range clauses {
		if len(c) == 0 {
			b.WriteString(" AND 1 = 0")
			continue
		}
		var (
			cb    strings.Builder
			cargs []any
		)
		for i, fc := range c {
			cond, arg, ok := factCondSQL(fc, d)
			if !ok {
				continue clauses
			}
			if i > 0 {
				cb.WriteString(" OR ")
			}
			cb.WriteString(cond)
			cargs = append(cargs, arg...)
		}
		b.WriteString(" AND (" + cb.String() + ")")
		args = append(args, cargs...)
	}
	return b.String(), args
}

// ExactWhere reports whether factsWhere states every clause of where
// (it leaves out none).
func ExactWhere(where []quan.FactsClause, d FactsDialect) bool {
	for _, c := range where {
		for _, fc := range c {
			if _, _, ok := factCondSQL(fc, d); !ok {
				return false
			}
		}
	}
	return true
}

// factCondSQL is one condition as SQL with its arguments, or false if it
// cannot be stated exactly.
func factCondSQL(fc quan.FactCond, d FactsDialect) (string, []any, bool) {
	switch fc.Field {
	case quan.FactUserID, quan.FactLevel, quan.FactOrders:
		col := map[quan.FactFields]string{quan.FactUserID: "user_id", quan.FactLevel: "level", quan.FactOrders: "orders"}[fc.Field]
		op, ok := map[quan.FactOp]string{quan.FactEq: "=", quan.FactNe: "<>", quan.FactLt: "<",
			quan.FactLe: "<=", quan.FactGt: ">", quan.FactGe: ">="}[fc.Op]
		return col + " " + op + " ?", []any{fc.Int}, ok
	case quan.FactRegion:
		return d.RegionIs, []any{fc.Str}, d.RegionIs != "" && fc.Op == quan.FactEq
	case quan.FactTags:
		if d.HasTag == nil || (fc.Op != quan.FactHasTag && fc.Op != quan.FactLacksTag) {
			return "", nil, false
		}
		cond, args, ok := d.HasTag(fc.Str)
		if fc.Op == quan.FactLacksTag {
			cond = "NOT (" + cond + ")"
		}
		return cond, args, ok
	}
	return "", nil, false
}

// scanFactsRow reads a user's facts from a row of *sql.Rows (RawBytes
// are valid until the next row: they are decoded here).
func scanFactsRow(row Scanner) (quan.UserFacts, error) {
	var (
		f           quan.UserFacts
		tags, attrs sql.RawBytes
	)
	if err := row.Scan(&f.UserID, &f.Level, &tags, NullTime(&f.RegisteredAt), &f.Region, &f.Orders, &attrs); err != nil {
		return f, err
	}
	return f, decodeFacts(&f, tags, attrs)
}

// PlainTag reports whether tag is written into the tags' JSON as it is,
// between quotes, by encoding/json and by a database's JSON functions
// alike: valid UTF-8 with no character either may escape (quote,
// backslash, control characters, <, > and &, U+2028 and U+2029).
func PlainTag(tag string) bool {
	if !utf8.ValidString(tag) {
		return false
	}
	for _, r := range tag {
		if r < 0x20 || r == 0x7f || r == '"' || r == '\\' || r == '<' || r == '>' || r == '&' || r == '\u2028' || r == '\u2029' {
			return false
		}
	}
	return true
}

// SplitFacts implements quan.FactsStore.SplitUserFacts: a count,
// then one walk of the primary key to each cut.
func SplitFacts(ctx context.Context, q Queryer, parts int) ([]int64, error) {
	if parts < 2 {
		return nil, nil
	}
	n, err := CountFacts(ctx, q)
	if err != nil {
		return nil, err
	}
	var splits []int64
	for k := 1; k < parts; k++ {
		at := n * int64(k) / int64(parts) // users up to the cut
		if at == 0 {
			continue
		}
		id, err := Query(ctx, q, "split user facts", Int64, `SELECT user_id FROM user_facts ORDER BY user_id LIMIT 1 OFFSET ?`, at-1)
		if err != nil {
			return nil, err
		}
		if len(id) == 1 && (len(splits) == 0 || id[0] > splits[len(splits)-1]) && at < n {
			splits = append(splits, id[0])
		}
	}
	return splits, nil
}

// CountFacts counts the users with facts on file.
func CountFacts(ctx context.Context, q Queryer) (int64, error) {
	n, err := Query(ctx, q, "count user facts", Int64, `SELECT COUNT(*) FROM user_facts`)
	if err != nil {
		return 0, err
	}
	return n[0], nil
}

// decodeFacts sets f's tags (never nil) and attrs (nil when empty) from
// their JSON.
func decodeFacts(f *quan.UserFacts, tags, attrs []byte) error {
	var err error
	if f.Tags, err = decodeTags(tags); err != nil {
		return fmt.Errorf("user %d: tags: %w", f.UserID, err)
	}
	if f.Attrs, err = decodeAttrs(attrs); err != nil {
		return fmt.Errorf("user %d: attrs: %w", f.UserID, err)
	}
	return nil
}

// decodeTags decodes a JSON array of strings. Arrays of plain strings (no
// escape, no space: how the stores write tags of printable text) are split
// by hand, five times faster than encoding/json; anything else goes to
// encoding/json.
func decodeTags(b []byte) ([]string, error) {
	if string(b) == "[]" {
		return []string{}, nil
	}
	if len(b) > 4 && b[0] == '[' && b[1] == '"' && b[len(b)-2] == '"' && b[len(b)-1] == ']' && !bytes.ContainsAny(b, "\\ \t\r\n") {
		inner := b[2 : len(b)-2] // a","b","c
		if n := bytes.Count(inner, []byte(`","`)); bytes.Count(inner, []byte(`"`)) == 2*n {
			out := make([]string, 0, n+1)
			for part := range bytes.SplitSeq(inner, []byte(`","`)) {
				out = append(out, string(part))
			}
			return out, nil
		}
	}
	var tags []string
	if err := json.Unmarshal(b, &tags); err != nil {
		return nil, err
	}
	if tags == nil {
		tags = []string{}
	}
	return tags, nil
}

// decodeAttrs decodes a JSON object of strings, nil when empty.
func decodeAttrs(b []byte) (map[string]string, error) {
	switch string(b) {
	case "{}", "null", "":
		return nil, nil
	}
	var attrs map[string]string
	if err := json.Unmarshal(b, &attrs); err != nil {
		return nil, err
	}
	if len(attrs) == 0 {
		return nil, nil
	}
	return attrs, nil
}

// InsertFacts is the INSERT of n rows of user_facts, FactsColumns then
// updated_at, to which an engine appends its clause that replaces the
// rows on file; FactsRows are its arguments.
func InsertFacts(n int) string {
	return `INSERT INTO user_facts (` + FactsColumns + `, updated_at) VALUES ` +
		strings.TrimSuffix(strings.Repeat(`(?, ?, ?, ?, ?, ?, ?, ?), `, n), `, `)
}

// FactsRows returns the arguments of InsertFacts(len(facts)): at writes
// a time as the engine keeps it.
func FactsRows[V any](facts []quan.UserFacts, now time.Time, at func(time.Time) V) ([]any, error) {
	args := make([]any, 0, 8*len(facts))
	for i := range facts {
		var err error
		if args, err = factsArgs(args, &facts[i], now, at); err != nil {
			return nil, err
		}
	}
	return args, nil
}

// factsArgs appends the arguments of one row of InsertFacts to args.
func factsArgs[V any](args []any, f *quan.UserFacts, now time.Time, at func(time.Time) V) ([]any, error) {
	tags := f.Tags
	if tags == nil {
		tags = []string{}
	}
	t, err := json.Marshal(tags)
	if err != nil {
		return nil, fmt.Errorf("user %d: tags: %w", f.UserID, err)
	}
	attrs := f.Attrs
	if attrs == nil {
		attrs = map[string]string{}
	}
	a, err := json.Marshal(attrs)
	if err != nil {
		return nil, fmt.Errorf("user %d: attrs: %w", f.UserID, err)
	}
	return append(args, f.UserID, f.Level, string(t), Null(at, f.RegisteredAt), f.Region, f.Orders, string(a), at(now)), nil
}
