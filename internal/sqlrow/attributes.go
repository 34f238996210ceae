package sqlrow

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/quanhq/quan"
)

// FactsColumns are the columns of user_facts a store reads, in ScanFacts'
// order (updated_at is written, never read).
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
func FactsOf(ctx context.Context, q Queryer, users []int64) (map[int64]*quan.UserFacts, error) {
	out := make(map[int64]*quan.UserFacts, len(users))
	for start := 0; start < len(users); start += factsBatch {
		part := users[start:min(start+factsBatch, len(users))]
		fs, err := Query(ctx, q, "read user facts", ScanFacts,
			`SELECT `+FactsColumns+` FROM user_facts WHERE user_id IN (`+Params(len(part))+`)`, Args(nil, part)[1:]...)
		if err != nil {
			return nil, err
		}
		for _, f := range fs {
			out[f.UserID] = f
		}
	}
	return out, nil
}

// ScanFactsAfter reads the facts of at most limit users above after, in
// user id order: a range of the primary key. A segment reads every user
// through it, so it decodes the facts without a pointer per user and the
// common tags and attrs without encoding/json (decodeTags, decodeAttrs).
func ScanFactsAfter(ctx context.Context, q Queryer, after int64, limit int) ([]quan.UserFacts, error) {
	if limit <= 0 {
		return nil, nil
	}
	return Query(ctx, q, "scan user facts", scanFactsRow,
		`SELECT `+FactsColumns+` FROM user_facts WHERE user_id > ? ORDER BY user_id LIMIT ?`, after, limit)
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

// ScanFacts reads a user's facts from a row of FactsColumns.
func ScanFacts(row Scanner) (*quan.UserFacts, error) {
	var (
		f           quan.UserFacts
		tags, attrs []byte
	)
	if err := row.Scan(&f.UserID, &f.Level, &tags, NullTime(&f.RegisteredAt), &f.Region, &f.Orders, &attrs); err != nil {
		return nil, err
	}
	if err := decodeFacts(&f, tags, attrs); err != nil {
		return nil, err
	}
	return &f, nil
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
