package redis

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/quanhq/quan"
)

var _ quan.ClaimLedger = (*Cache)(nil)

// Handed implements quan.ClaimLedger with one script call.
func (c *Cache) Handed(ctx context.Context, template int64, keys []string) (_ []quan.Handoff, err error) {
	defer c.unavailable(&err)
	k := c.keys(template)
	ks := make([]string, 0, 1+len(keys))
	ks = append(ks, k.ledger())
	for _, key := range keys {
		ks = append(ks, k.record(key))
	}
	vs, err := handedScript.Exec(ctx, c.client, ks, []string{k.reaping()}).AsIntSlice()
	if err == nil && len(vs) != len(keys) {
		err = fmt.Errorf("script answered %d claims of %d", len(vs), len(keys))
	}
	if err != nil {
		return nil, fmt.Errorf("redis claims handed off: %w", err)
	}
	out := make([]quan.Handoff, len(vs))
	for i, v := range vs {
		switch v {
		case 1:
			out[i] = quan.HandedNow
		case 2:
			out[i] = quan.HandedReaping
		default:
			out[i] = quan.HandedBefore
		}
	}
	return out, nil
}

// Abandoned implements quan.ClaimLedger: one script call a template with
// a ledger.
func (c *Cache) Abandoned(ctx context.Context, cutoff time.Time, max int) (_ []quan.LedgerEntry, err error) {
	defer c.unavailable(&err)
	states, err := c.client.Do(ctx, c.client.B().Smembers().Key(c.ledgers()).Build()).AsStrSlice()
	if err != nil {
		return nil, fmt.Errorf("redis claim ledgers: %w", err)
	}
	var out []quan.LedgerEntry
	for _, st := range states {
		base := strings.TrimSuffix(st, "s")
		template, err := templateOfKey(c.prefix, base)
		if err != nil {
			return nil, err
		}
		k := keys{base}
		vs, err := abandonScript.Exec(ctx, c.client, []string{k.ledger(), k.reaping(), c.ledgers(), st},
			[]string{strconv.FormatInt(cutoff.UnixMilli(), 10), strconv.Itoa(max)}).AsStrSlice()
		if err != nil {
			return nil, fmt.Errorf("redis abandoned claims of template %d: %w", template, err)
		}
		for i := 0; i+1 < len(vs); i += 2 {
			ms, err := strconv.ParseFloat(vs[i+1], 64)
			if err != nil {
				return nil, fmt.Errorf("redis abandoned claims of template %d: score %q: %w", template, vs[i+1], err)
			}
			out = append(out, quan.LedgerEntry{Template: template, Key: strings.TrimPrefix(vs[i], base+"k:"),
				At: time.UnixMilli(int64(ms)).UTC()})
		}
	}
	return out, nil
}

// Reaped implements quan.ClaimLedger.
func (c *Cache) Reaped(ctx context.Context, template int64, key string) (err error) {
	defer c.unavailable(&err)
	k := c.keys(template)
	if err := c.client.Do(ctx, c.client.B().Zrem().Key(k.reaping()).Member(k.record(key)).Build()).Error(); err != nil {
		return fmt.Errorf("redis claim reaped: %w", err)
	}
	return nil
}

// templateOfKey reads the template id out of the base of its keys,
// prefix + "{t:ID}:".
func templateOfKey(prefix, base string) (int64, error) {
	s := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(base, prefix), "{t:"), "}:")
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("redis claim ledger %q: not a template's", base)
	}
	return id, nil
}
