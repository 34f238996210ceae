package quantest

import (
	"fmt"
	"math/bits"
	"strconv"
	"testing"
	"time"

	"github.com/quanhq/quan"
)

// BulkOptions describes one bulk distribution for RunBulk. The zero value
// distributes a million users in chunks of quan.DefaultChunkSize.
type BulkOptions struct {
	Users     int     // rows of the file; 0 means 1,000,000
	ChunkSize int     // rows per chunk; 0 means quan.DefaultChunkSize
	Limit     int64   // the template's per-user limit; 0 means 1
	Stock     int64   // the template's stock; 0 means one per row and per held user
	Held      float64 // share of the users who hold a coupon of the template already
	Invalid   float64 // share of the rows the file check refused
	Seed      uint64  // varies the user ids
}

// BulkResult is what RunBulk measured.
type BulkResult struct {
	Rows   int64
	Wall   time.Duration // in ApplyChunk, summed over the chunks
	CPU    time.Duration // of the whole process during the distribution (user + system)
	MaxRSS int64         // peak resident set of the process so far, in bytes; 0 if unknown
	Stats  time.Duration // one CouponStats of the template afterwards
	Counts quan.TaskCounts
}

// String formats r as one line of a results table.
func (r BulkResult) String() string {
	return fmt.Sprintf("%d rows in %v (%.0f rows/s), CPU %v, peak RSS %d MiB, CouponStats %v; issued %d, limit_reached %d, out_of_stock %d, invalid %d",
		r.Rows, r.Wall.Round(time.Millisecond), float64(r.Rows)/r.Wall.Seconds(), r.CPU.Round(time.Millisecond),
		r.MaxRSS>>20, r.Stats.Round(time.Millisecond), r.Counts.Issued, r.Counts.Failed.LimitReached, r.Counts.Failed.OutOfStock, r.Counts.Failed.InvalidID)
}

// RunBulk distributes opt.Users random 19-digit user ids, in random order,
// from one template, chunk after chunk as a task runner does, and checks
// the outcome. The users who hold a coupon
// already get it from an earlier task, untimed. Rows are made chunk by
// chunk, as a file reader streams them, so memory holds one chunk.
//
// It is the measurement behind an adapter's bulk benchmark; the figures
// are for people, never asserted.
func RunBulk(t *testing.T, s TaskStores, opt BulkOptions) BulkResult {
	t.Helper()
	if opt.Users <= 0 {
		opt.Users = 1_000_000
	}
	if opt.ChunkSize <= 0 {
		opt.ChunkSize = quan.DefaultChunkSize
	}
	if opt.Limit <= 0 {
		opt.Limit = 1
	}
	ctx := t.Context()
	tpl := newTemplate(t, 1, "bulk")
	tpl.Status = quan.TemplateActive
	if opt.Stock <= 0 {
		opt.Stock = 2 * int64(opt.Users)
	}
	tpl.Stock, tpl.TotalStock = opt.Stock, opt.Stock
	tpl.PerUserLimit = opt.Limit
	if err := s.Templates.CreateTemplate(ctx, tpl, tpl.CreatedBy); err != nil {
		t.Fatal(err)
	}
	ids := userIDs{n: uint64(opt.Users), seed: opt.Seed}
	every := func(share float64) int {
		if share <= 0 {
			return 0
		}
		return max(1, int(1/share))
	}
	heldEvery, invalidEvery := every(opt.Held), every(opt.Invalid)

	// The earlier task: users of every heldEvery-th row get a coupon.
	if heldEvery > 0 {
		task := bulkTask(t, s, tpl, "held already")
		var rows []quan.ChunkRow
		seq := int64(0)
		for i := 0; i < opt.Users; i += heldEvery {
			u := ids.at(uint64(i))
			rows = append(rows, quan.ChunkRow{Line: int64(i + 2), UserID: u, Raw: strconv.FormatInt(u, 10)})
			if len(rows) == opt.ChunkSize || i+heldEvery >= opt.Users {
				seq++
				if _, err := s.Tasks.ApplyChunk(ctx, &quan.Chunk{TaskID: task.ID, Owner: task.Owner, Seq: seq, Rows: rows, Now: chunkNow}); err != nil {
					t.Fatal(err)
				}
				rows = rows[:0]
			}
		}
	}

	task := bulkTask(t, s, tpl, "bulk")
	rows := make([]quan.ChunkRow, 0, opt.ChunkSize)
	var res BulkResult
	cpu0 := cpuTime()
	for i, seq := 0, int64(1); i < opt.Users; seq++ {
		rows = rows[:0]
		for ; i < opt.Users && len(rows) < opt.ChunkSize; i++ {
			u := ids.at(uint64(i))
			r := quan.ChunkRow{Line: int64(i + 2), UserID: u, Raw: strconv.FormatInt(u, 10)}
			if invalidEvery > 0 && i%invalidEvery == invalidEvery-1 {
				r = quan.ChunkRow{Line: r.Line, Raw: "ID " + r.Raw, Cause: quan.CauseInvalidID}
			}
			rows = append(rows, r)
		}
		c := &quan.Chunk{TaskID: task.ID, Owner: task.Owner, Seq: seq, Rows: rows,
			BytesRead: int64(i) * 24, Now: chunkNow.Add(time.Duration(seq) * time.Millisecond)}
		start := time.Now()
		n, err := s.Tasks.ApplyChunk(ctx, c)
		res.Wall += time.Since(start)
		if err != nil {
			t.Fatalf("chunk %d: %v", seq, err)
		}
		res.Counts.Add(n)
	}
	res.CPU = cpuTime() - cpu0
	res.MaxRSS = maxRSS()
	res.Rows = res.Counts.Rows

	start := time.Now()
	st, err := s.Coupons.CouponStats(ctx, tpl.ID, task.ID)
	res.Stats = time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	// Every row has its outcome, and the coupons add up.
	var held int64
	if heldEvery > 0 {
		held = int64((opt.Users + heldEvery - 1) / heldEvery)
	}
	c := res.Counts
	if c.Rows != int64(opt.Users) || c.Issued+c.FailedTotal() != c.Rows || st.FromTask != c.Issued ||
		st.Coupons != c.Issued+held || st.MaxPerUser > opt.Limit {
		t.Errorf("bulk distribution: counts %+v, stats %+v; want %d rows, each issued or failed, %d held before",
			c, st, opt.Users, held)
	}
	return res
}

func bulkTask(t *testing.T, s TaskStores, tpl *quan.Template, name string) *quan.Task {
	t.Helper()
	task := &quan.Task{
		ShopNo: tpl.ShopNo, TemplateID: tpl.ID, Name: name, FileName: name + ".xlsx", FileSize: 1 << 20,
		ChunkSize: quan.DefaultChunkSize, Status: quan.TaskRunning, Owner: runner,
		CreatedBy: tpl.CreatedBy, CreatedAt: base, StartedAt: base, UpdatedAt: base, LeaseUntil: chunkNow.Add(time.Hour),
	}
	if err := s.Tasks.CreateTask(t.Context(), task); err != nil {
		t.Fatal(err)
	}
	return task
}

// userIDs maps 0 … n-1 to distinct 19-digit user ids in random order:
// a multiplication modulo the span of ids from 10^18 up.
type userIDs struct {
	n, seed uint64
}

func (u userIDs) at(i uint64) int64 {
	const (
		low  = 1_000_000_000_000_000_000 // the smallest 19-digit id
		span = 8_000_000_000_000_000_000 // = 2^21·5^18 ids, all below MaxInt64
		mul  = 7_046_029_254_386_353_131 // prime to 2 and 5, so the map is one to one
	)
	hi, lo := bits.Mul64(i+u.seed*u.n, mul)
	return int64(low + bits.Rem64(hi, lo, span))
}
