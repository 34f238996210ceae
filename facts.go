package quan

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Limits of a user's facts. They are the sizes rules are priced for when
// they are saved (rules.SizeTags, SizeAttrs, SizeString; a test keeps
// them equal): facts within them keep a rule within its estimated cost.
const (
	MaxUserTags  = 50 // tags a user may have
	MaxUserAttrs = 50 // attrs entries a user may have
	MaxFactBytes = 64 // bytes of a tag, the region, an attrs name or value
)

// Validate checks f as facts to store: a positive user id, level and
// orders not negative, a registration time (if known) from 1970 to 9999,
// at most MaxUserTags tags and MaxUserAttrs attrs,
// and every tag, attrs name and value and the region valid UTF-8 of at
// most MaxFactBytes bytes, tags and names not empty. It returns an *Error
// EINVALID with a FieldError for each problem ("tags[3]", "attrs.vip").
func (f *UserFacts) Validate() error {
	var bad []FieldError
	add := func(field, format string, args ...any) {
		bad = append(bad, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	text := func(field, s string, empty bool) {
		switch {
		case s == "" && !empty:
			add(field, "is empty")
		case len(s) > MaxFactBytes:
			add(field, "is %d bytes long: at most %d", len(s), MaxFactBytes)
		case TextProblem(s, "") != "":
			add(field, "%s", TextProblem(s, ""))
		}
	}
	if f.UserID <= 0 {
		add("userId", "must be a positive user id")
	}
	if f.Level < 0 {
		add("level", "must be 0 (none) or more")
	}
	if f.Orders < 0 {
		add("orders", "must be 0 or more")
	}
	if t := f.RegisteredAt; !t.IsZero() && (t.UTC().Year() < 1970 || TimeProblem(t) != "") {
		add("registeredAt", "must be a time from 1970 to 9999, or absent if unknown")
	}
	if len(f.Tags) > MaxUserTags {
		add("tags", "has %d tags: at most %d", len(f.Tags), MaxUserTags)
	} else {
		for i, t := range f.Tags {
			text(fmt.Sprintf("tags[%d]", i), t, false)
		}
	}
	text("region", f.Region, true)
	if len(f.Attrs) > MaxUserAttrs {
		add("attrs", "has %d entries: at most %d", len(f.Attrs), MaxUserAttrs)
	} else {
		for _, k := range slices.Sorted(maps.Keys(f.Attrs)) {
			switch {
			case k == "":
				add("attrs", "has an entry with an empty name")
			case len(k) > MaxFactBytes:
				add("attrs", "the name %q is %d bytes long: at most %d", ClipRaw(k), len(k), MaxFactBytes)
			case TextProblem(k, "") != "":
				add("attrs", "the name %q %s", k, TextProblem(k, ""))
			default:
				text("attrs."+k, f.Attrs[k], true)
			}
		}
	}
	if len(bad) > 0 {
		return &Error{Code: EINVALID, Message: "invalid user facts", Fields: bad}
	}
	return nil
}

// Normalize gives f the form the store keeps and returns: tags in their
// first order without repeats and never nil, attrs nil when empty, the
// registration time in UTC to the microsecond.
func (f *UserFacts) Normalize() {
	tags := make([]string, 0, len(f.Tags))
	for _, t := range f.Tags {
		if !slices.Contains(tags, t) {
			tags = append(tags, t)
		}
	}
	f.Tags = tags
	if len(f.Attrs) == 0 {
		f.Attrs = nil
	}
	if !f.RegisteredAt.IsZero() {
		f.RegisteredAt = f.RegisteredAt.UTC().Truncate(time.Microsecond)
	}
}

// FactsStore keeps users' facts (UserFacts), for eligibility rules
// and segments.
type FactsStore interface {
	// PutUserFacts stores facts in one transaction, all or none, each
	// replacing whatever is on file of its user (tags and attrs
	// included), with updated time now. facts are valid and normalised
	// and name each user once: the caller's duty. Any number may be
	// given; an adapter splits them into statements as it must.
	PutUserFacts(ctx context.Context, now time.Time, facts []UserFacts) error
	// UserFacts returns the facts on file of users, by user; users with
	// none are missing from the map. Tags are never nil.
	UserFacts(ctx context.Context, users []int64) (map[int64]*UserFacts, error)
	// ScanUserFacts returns the facts of at most limit users whose id is
	// above after and who pass filter, in ascending user id: a segment
	// reads every user by calling it again with the last id returned,
	// until fewer than limit come back. Only the facts filter.Read names
	// are filled in (Tags never nil). It may return users filter.Match
	// refuses, where its query cannot state a condition exactly, but
	// never leaves out one Match passes.
	ScanUserFacts(ctx context.Context, after int64, limit int, filter FactsFilter) ([]UserFacts, error)
	// ExactFilter reports whether ScanUserFacts states every clause of
	// where exactly, and so returns the users FactsFilter.Match passes
	// and no others.
	ExactFilter(where []FactsClause) bool
	// CountUserFacts returns how many users have facts on file.
	CountUserFacts(ctx context.Context) (int64, error)
	// SplitUserFacts returns at most parts-1 ascending user ids that cut
	// the users on file into ranges of about equal count, so that a
	// segment can read them at once: with splits s, the ranges are ids
	// up to s[0], above s[0] up to s[1], ..., above the last. None is
	// empty, so fewer come back when there are few users (none for one
	// user or none on file, or parts below 2).
	SplitUserFacts(ctx context.Context, parts int) ([]int64, error)
}
