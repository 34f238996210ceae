package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/quanhq/quan"
)

// primeBatch is how many counts one HSET of Prime carries, and
// primeInFlight how many such commands go in one pipeline.
const (
	primeBatch    = 10_000
	primeInFlight = 4
)

// primeTempTTL bounds how long the counts of a Prime that died half-way
// stay in Redis.
const primeTempTTL = time.Hour

var outcome = map[byte]quan.Refusal{
	'-': "",
	'i': quan.RefusedInactive,
	'n': quan.RefusedNotStarted,
	'e': quan.RefusedEnded,
	'l': quan.RefusedLimit,
	'd': quan.RefusedDaily,
	'w': quan.RefusedWeekly,
	's': quan.RefusedSoldOut,
}

// Reserve implements quan.Cache with one script call for the whole batch.
// A key record made before the last Prime is not trusted: the batch is
// reserved anew against the new state.
func (c *Cache) Reserve(ctx context.Context, template int64, key string, users []int64, now time.Time) (_ []quan.Refusal, err error) {
	defer c.unavailable(&err)
	k := c.keys(template)
	args := reserveArgs(make([]string, 0, 3+len(users)), users, now)
	o, err := reserveScript.Exec(ctx, c.client, []string{k.state(), k.users(), k.record(key)}, args).ToString()
	if rueidis.IsRedisNil(err) {
		return nil, quan.ErrCacheCold
	}
	if err != nil {
		return nil, fmt.Errorf("redis reserve: %w", err)
	}
	out, err := outcomes(o)
	if err != nil {
		return nil, fmt.Errorf("redis reserve: %w", err)
	}
	return out, nil
}

// allowThenReserve is ReserveLimited in two round trips, for a cluster.
// The tokens of a cold template go back (what refund cannot give back
// stays taken: the limit errs on the strict side).
func (c *Cache) allowThenReserve(ctx context.Context, template int64, key string, users []int64, now time.Time, buckets []quan.Bucket) (int, time.Duration, []quan.Refusal, error) {
	refused, wait, err := c.Allow(ctx, buckets...)
	if err != nil || refused >= 0 {
		return refused, wait, nil, err
	}
	out, err := c.Reserve(ctx, template, key, users, now)
	if errors.Is(err, quan.ErrCacheCold) && len(buckets) > 0 {
		err = errors.Join(append([]error{err}, c.refund(ctx, c.bucketCalls(buckets))...)...)
	}
	return -1, 0, out, err
}

// reserveArgs appends reserveScript's ARGV to args.
func reserveArgs(args []string, users []int64, now time.Time) []string {
	args = append(args, strconv.FormatInt(now.Unix(), 10), strconv.Itoa(now.Nanosecond()),
		strconv.FormatInt(int64(KeyTTL/time.Second), 10))
	for _, u := range users {
		args = append(args, strconv.FormatInt(u, 10))
	}
	return args
}

// outcomes reads the outcome characters reserveScript answers.
func outcomes(o string) ([]quan.Refusal, error) {
	out := make([]quan.Refusal, len(o))
	for i := range len(o) {
		r, ok := outcome[o[i]]
		if !ok {
			return nil, fmt.Errorf("unknown outcome %q", o[i])
		}
		out[i] = r
	}
	return out, nil
}

// Release implements quan.Cache. A template not loaded, or a key recorded
// before the last Prime, has nothing to give back: Release changes nothing
// and returns nil.
func (c *Cache) Release(ctx context.Context, template int64, key string) (err error) {
	defer c.unavailable(&err)
	k := c.keys(template)
	err = releaseScript.Exec(ctx, c.client, []string{k.state(), k.users(), k.record(key)}, nil).Error()
	if err != nil {
		return fmt.Errorf("redis release: %w", err)
	}
	return nil
}

// Prime implements quan.Cache. The counts go to a temporary hash in
// pipelined batches, holding at most primeBatch×primeInFlight of them in
// memory; one script then swaps that hash and the new state in, under a
// new generation. If holdings fails, the old state stays.
func (c *Cache) Prime(ctx context.Context, st quan.TemplateState, holdings iter.Seq2[quan.Holding, error]) (err error) {
	defer c.unavailable(&err)
	_, err = c.prime(ctx, st, holdings, false)
	return err
}

// Load implements quan.Cache: Prime, but the swap leaves a template that
// is loaded by then alone.
func (c *Cache) Load(ctx context.Context, st quan.TemplateState, holdings iter.Seq2[quan.Holding, error]) (_ bool, err error) {
	defer c.unavailable(&err)
	if _, err := c.State(ctx, st.ID); err == nil {
		return false, nil // spare reading the holdings
	}
	return c.prime(ctx, st, holdings, true)
}

func (c *Cache) prime(ctx context.Context, st quan.TemplateState, holdings iter.Seq2[quan.Holding, error], onlyCold bool) (bool, error) {
	var b [8]byte
	rand.Read(b[:])
	gen := hex.EncodeToString(b[:])
	k := c.keys(st.ID)
	temp := k.temp(gen)
	// The counts, and those of the holdings' day and week when the
	// template has period limits, each in a temporary hash.
	counts, days, weeks := &primeHash{key: temp}, &primeHash{key: temp + ":d"}, &primeHash{key: temp + ":w"}
	periodic := st.PerUserDaily > 0 || st.PerUserWeekly > 0
	var day int64 // of the holdings' period counts; 0: they carry none

	var cmds rueidis.Commands
	send := func(last bool) error {
		if len(cmds) == 0 || (!last && len(cmds) < primeInFlight) {
			return nil
		}
		for _, r := range c.client.DoMulti(ctx, cmds...) {
			if err := r.Error(); err != nil {
				return err
			}
		}
		cmds = cmds[:0]
		return nil
	}
	add := func(h *primeHash, user, n int64) error {
		h.args = append(h.args, strconv.FormatInt(user, 10), strconv.FormatInt(n, 10))
		if len(h.args) < 2*primeBatch {
			return nil
		}
		cmds = h.flush(c.client, cmds)
		return send(false)
	}
	fail := func(err error) (bool, error) {
		// Best effort: the TTL removes the counts anyway.
		c.client.Do(context.WithoutCancel(ctx), c.client.B().Del().Key(counts.key, days.key, weeks.key).Build())
		return false, fmt.Errorf("redis prime template %d: %w", st.ID, err)
	}
	for h, err := range holdings {
		if err != nil {
			return fail(err)
		}
		if h.Count > 0 { // a user holding none needs no entry
			if err := add(counts, h.UserID, h.Count); err != nil {
				return fail(err)
			}
		}
		if !periodic || h.PeriodDay == 0 {
			continue
		}
		if day == 0 {
			day = h.PeriodDay
		} else if h.PeriodDay != day {
			return fail(quan.Errorf(quan.EINVALID, "the holdings of template %d count the periods of two days, %d and %d: a load takes one", st.ID, day, h.PeriodDay))
		}
		for _, p := range []struct {
			h *primeHash
			n int64
		}{{days, h.Day}, {weeks, h.Week}} {
			if p.n <= 0 {
				continue
			}
			if err := add(p.h, h.UserID, p.n); err != nil {
				return fail(err)
			}
		}
	}
	for _, h := range []*primeHash{counts, days, weeks} {
		cmds = h.flush(c.client, cmds)
	}
	if err := send(true); err != nil {
		return fail(err)
	}
	only := "0"
	if onlyCold {
		only = "1"
	}
	keys := []string{k.state(), k.users(), counts.key, days.key, weeks.key}
	if day != 0 {
		keys = append(keys, k.day(day), k.week(quan.WeekOfDay(day)))
	}
	sargs := append([]string{gen}, stateArgs(st)...)
	sargs = append(sargs, strconv.FormatInt(st.Stock, 10), only)
	loaded, err := swapScript.Exec(ctx, c.client, keys, sargs).AsInt64()
	if err != nil {
		return fail(err)
	}
	return loaded == 1, nil
}

// primeHash is a temporary hash Prime fills: the fields and values of its
// next HSET, and whether it was written yet (and so given its TTL).
type primeHash struct {
	key   string
	args  []string
	wrote bool
}

// flush appends to cmds the HSET of h's pending fields, with the EXPIRE
// of the hash after its first, and returns cmds.
func (h *primeHash) flush(client rueidis.Client, cmds rueidis.Commands) rueidis.Commands {
	if len(h.args) == 0 {
		return cmds
	}
	cmds = append(cmds, client.B().Arbitrary("HSET").Keys(h.key).Args(h.args...).Build())
	h.args = make([]string, 0, 2*primeBatch)
	if !h.wrote {
		cmds = append(cmds, client.B().Expire().Key(h.key).Seconds(int64(primeTempTTL/time.Second)).Build())
		h.wrote = true
	}
	return cmds
}

// stateArgs returns the snapshot fields of st as the scripts take them:
// shop, status, issue start and end as seconds and nanoseconds, limit,
// daily and weekly limits.
func stateArgs(st quan.TemplateState) []string {
	return []string{
		strconv.FormatInt(st.ShopNo, 10), string(st.Status),
		strconv.FormatInt(st.IssueStart.Unix(), 10), strconv.Itoa(st.IssueStart.Nanosecond()),
		strconv.FormatInt(st.IssueEnd.Unix(), 10), strconv.Itoa(st.IssueEnd.Nanosecond()),
		strconv.FormatInt(st.PerUserLimit, 10),
		strconv.FormatInt(st.PerUserDaily, 10), strconv.FormatInt(st.PerUserWeekly, 10),
	}
}

// Update implements quan.Cache. The stock may fall below zero if
// stockDelta says so; Reserve then refuses with sold_out until it is
// positive again.
func (c *Cache) Update(ctx context.Context, st quan.TemplateState, stockDelta int64) (err error) {
	defer c.unavailable(&err)
	args := append(stateArgs(st), strconv.FormatInt(stockDelta, 10))
	err = updateScript.Exec(ctx, c.client, []string{c.keys(st.ID).state()}, args).Error()
	if rueidis.IsRedisNil(err) {
		return quan.ErrCacheCold
	}
	if err != nil {
		return fmt.Errorf("redis update template %d: %w", st.ID, err)
	}
	return nil
}

// State implements quan.Cache.
func (c *Cache) State(ctx context.Context, template int64) (_ quan.TemplateState, err error) {
	defer c.unavailable(&err)
	m, err := c.client.Do(ctx, c.client.B().Hgetall().Key(c.keys(template).state()).Build()).AsStrMap()
	if err != nil {
		return quan.TemplateState{}, fmt.Errorf("redis state of template %d: %w", template, err)
	}
	if len(m) == 0 {
		return quan.TemplateState{}, quan.ErrCacheCold
	}
	var bad error
	num := func(f string) int64 {
		n, err := strconv.ParseInt(m[f], 10, 64)
		if err != nil && bad == nil {
			bad = fmt.Errorf("field %s: %w", f, err)
		}
		return n
	}
	st := quan.TemplateState{
		ID:           template,
		ShopNo:       num("shop"),
		Status:       quan.TemplateStatus(m["status"]),
		IssueStart:   time.Unix(num("ss"), num("sn")).UTC(),
		IssueEnd:     time.Unix(num("es"), num("en")).UTC(),
		PerUserLimit: num("limit"),
		Stock:        num("stock"),
	}
	if m["daily"] != "" || m["weekly"] != "" { // missing in a state of before
		st.PerUserDaily, st.PerUserWeekly = num("daily"), num("weekly")
	}
	if bad != nil {
		return quan.TemplateState{}, fmt.Errorf("redis state of template %d: %w", template, bad)
	}
	return st, nil
}

// Held implements quan.Cache; ErrCacheCold if the template is not loaded.
func (c *Cache) Held(ctx context.Context, template, user int64) (_ int64, err error) {
	defer c.unavailable(&err)
	k := c.keys(template)
	n, err := heldScript.Exec(ctx, c.client, []string{k.state(), k.users()},
		[]string{strconv.FormatInt(user, 10)}).AsInt64()
	if rueidis.IsRedisNil(err) {
		return 0, quan.ErrCacheCold
	}
	if err != nil {
		return 0, fmt.Errorf("redis held of template %d: %w", template, err)
	}
	return n, nil
}

// Reservation implements quan.Cache. A record made under an earlier
// generation was forgotten by a Prime.
func (c *Cache) Reservation(ctx context.Context, template int64, key string) (_ []quan.Refusal, err error) {
	defer c.unavailable(&err)
	k := c.keys(template)
	res := c.client.DoMulti(ctx,
		c.client.B().Hget().Key(k.state()).Field("gen").Build(),
		c.client.B().Get().Key(k.record(key)).Build())
	gen, err := res[0].ToString()
	if rueidis.IsRedisNil(err) {
		return nil, quan.Errorf(quan.ENOTFOUND, "no reservation %q of template %d", key, template)
	}
	if err != nil {
		return nil, fmt.Errorf("redis reservation: %w", err)
	}
	g, o, err := record(res[1])
	if err != nil {
		return nil, fmt.Errorf("redis reservation: %w", err)
	}
	if g != gen {
		return nil, quan.Errorf(quan.ENOTFOUND, "no reservation %q of template %d", key, template)
	}
	out, err := outcomes(o)
	if err != nil {
		return nil, fmt.Errorf("redis reservation: %w", err)
	}
	return out, nil
}

// record reads the key record that a GET answered r: its generation and
// outcomes, empty if there is none.
func record(r rueidis.RedisResult) (gen, outcomes string, err error) {
	v, err := r.ToString()
	if rueidis.IsRedisNil(err) {
		return "", "", nil
	}
	if err != nil {
		return "", "", err
	}
	gen, rest, ok1 := strings.Cut(v, "|")
	outcomes, _, ok2 := strings.Cut(rest, "|")
	if !ok1 || !ok2 {
		return "", "", fmt.Errorf("key record %q is not gen|outcomes|users", v)
	}
	return gen, outcomes, nil
}
