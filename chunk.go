package quan

import (
	"slices"
	"time"
)

// ChunkRow is one data row of a distribution file, in file order.
type ChunkRow struct {
	Line   int64  // the row number the user sees in the spreadsheet
	UserID int64  // parsed; 0 when Cause was set by the file check
	Raw    string // the user id as written, for the failure report
	Cause  Cause  // "" for a row still to be decided by the store
	// Contact is the row's phone and mail columns, kept only when the
	// task notifies by SMS or email and one is not blank: the store picks
	// each issued row's address from them first (PickContact). A pointer,
	// so that the rows of other tasks, a million of them in flight, pay 8
	// bytes for it, not 32.
	Contact *RowContact
}

// RowContact is a row's phone and mail columns as written, trimmed and
// clipped by ClipContact; "" when blank.
type RowContact struct {
	Phone, Mail string
}

// contact returns the row's contact columns, blank if it has none.
func (r *ChunkRow) contact() RowContact {
	if r.Contact == nil {
		return RowContact{}
	}
	return *r.Contact
}

// Chunk is a run of consecutive rows that a store applies atomically.
type Chunk struct {
	TaskID    int64
	Owner     string // the runner that read the chunk, for the logs
	Seq       int64  // 1-based position in the file; chunks apply in any order
	Rows      []ChunkRow
	BytesRead int64 // of the file's data once this chunk was read
	Now       time.Time
}

// Failure is one row of a task that got no coupon.
type Failure struct {
	Line  int64  `json:"line"`
	Raw   string `json:"userId"`
	Cause Cause  `json:"cause"`
}

// Issue is one coupon a chunk will create: the row it serves and the
// user's receive sequence.
type Issue struct {
	Row int // index into Chunk.Rows
	Seq int64
}

// PlanChunk decides the rows of a chunk that the file check left
// undecided, in file order, given what the store holds inside the chunk's
// transaction: held[user] is the number of coupons of the template the user
// holds now, stock the template's stock, and issuing whether the template
// issues at now. It sets Cause on refused rows and returns the coupons to
// create; len(issues) is the stock to take. Every adapter calls it so the
// rules cannot drift between engines.
//
// periods is what users received by Shanghai day and week (nil when t
// has no period limits); the chunk's coupons are received at c.Now.
func PlanChunk(c *Chunk, t *Template, held map[int64]int64, periods *PeriodHeld, stock int64) []Issue {
	issuing := t.Status == TemplateActive && !c.Now.Before(t.IssueStart) && c.Now.Before(t.IssueEnd)
	var issues []Issue
	for i := range c.Rows {
		r := &c.Rows[i]
		if r.Cause != "" {
			continue
		}
		switch {
		case !issuing:
			r.Cause = CauseTemplateInactive
		case held[r.UserID] >= t.PerUserLimit:
			r.Cause = CauseLimitReached
		case t.PeriodRefusal(periods, r.UserID, c.Now) != "":
			r.Cause = t.PeriodRefusal(periods, r.UserID, c.Now)
		case int64(len(issues)) >= stock:
			r.Cause = CauseOutOfStock
		default:
			issues = append(issues, Issue{Row: i, Seq: held[r.UserID] + 1})
			periods.Add(r.UserID, c.Now)
		}
	}
	return issues
}

// ChunkCounts counts the outcomes of a planned chunk.
func ChunkCounts(c *Chunk, dryRun bool) TaskCounts {
	var n TaskCounts
	n.Rows = int64(len(c.Rows))
	for _, r := range c.Rows {
		switch {
		case r.Cause != "":
			n.AddFailure(r.Cause)
		case dryRun:
			n.Valid++
		default:
			n.Valid++
			n.Issued++
		}
	}
	return n
}

// NewCoupon returns the coupon a distribution issues to user from t at now.
func NewCoupon(t *Template, user, seq, taskID int64, now time.Time) Coupon {
	start, end := t.CouponWindow(now)
	return Coupon{
		TemplateID: t.ID,
		ShopNo:     t.ShopNo,
		UserID:     user,
		Seq:        seq,
		Status:     CouponAvailable,
		ValidStart: start,
		ValidEnd:   end,
		Source:     FromDistribution,
		TaskID:     taskID,
		CreatedAt:  now,
		UpdatedAt:  now,
	}
}

// Check refuses a chunk the store cannot apply: a seq below 1, an unknown
// cause, an undecided row without a user, or a user undecided twice.
func (c *Chunk) Check() error {
	if c.Seq < 1 {
		return Errorf(EINVALID, "chunk seq %d: chunks are numbered from 1", c.Seq)
	}
	rows := c.Rows
	users := make([]int64, 0, len(rows))
	for _, r := range rows {
		switch r.Cause {
		case "":
		case CauseInvalidID, CauseInexactNumber, CauseDuplicate,
			CauseLimitReached, CauseOutOfStock, CauseTemplateInactive, CauseDailyLimit, CauseWeeklyLimit, CauseNotEligible:
			continue
		default:
			return Errorf(EINVALID, "line %d has an unknown cause %q", r.Line, r.Cause)
		}
		if r.UserID <= 0 {
			return Errorf(EINVALID, "line %d is undecided but has no user id", r.Line)
		}
		users = append(users, r.UserID)
	}
	slices.Sort(users)
	for i := 1; i < len(users); i++ {
		if users[i] != users[i-1] {
			continue
		}
		var lines []int64
		for _, r := range rows {
			if r.Cause == "" && r.UserID == users[i] {
				lines = append(lines, r.Line)
			}
		}
		return Errorf(EINVALID, "user %d is undecided on lines %v: the file check must mark repeats %s",
			users[i], lines, CauseDuplicate)
	}
	return nil
}
