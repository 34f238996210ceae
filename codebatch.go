package quan

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"strconv"
	"sync"
	"time"
)

// CodeBatchStatus is where the generation of a batch of codes is.
type CodeBatchStatus string

// Code batch statuses.
const (
	CodeBatchGenerating CodeBatchStatus = "generating"
	CodeBatchReady      CodeBatchStatus = "ready"
)

// MaxCodeBatch is the most codes one batch holds.
const MaxCodeBatch = 10_000_000

// CodeBatch is a merchant's batch of redemption codes (兑换码) for a
// template: each code, redeemed once by a user, issues one coupon.
type CodeBatch struct {
	ID         int64           `json:"id"`
	TemplateID int64           `json:"templateId"`
	ShopNo     int64           `json:"shopNo"`
	Count      int64           `json:"count"`     // codes asked for
	Generated  int64           `json:"generated"` // codes made so far
	Status     CodeBatchStatus `json:"status"`
	CreatedBy  string          `json:"createdBy"`
	CreatedAt  time.Time       `json:"createdAt"`
	UpdatedAt  time.Time       `json:"updatedAt"`
}

// RedeemCode is one code of a batch and, once redeemed, by whom.
type RedeemCode struct {
	Code       string    `json:"code"`
	BatchID    int64     `json:"batchId"`
	TemplateID int64     `json:"templateId"`
	UserID     int64     `json:"userId,omitempty"`
	CouponID   int64     `json:"couponId,omitempty"`
	RedeemedAt time.Time `json:"redeemedAt,omitzero"`
}

// CodesExport writes the codes of a batch to w as a spreadsheet file,
// streamed row by row. It returns the first error of codes, or ctx's when
// ctx ends; w holds a partial file then.
type CodesExport interface {
	Write(ctx context.Context, w io.Writer, codes iter.Seq2[RedeemCode, error]) error
}

// WriteCodesCSV writes codes to w as CSV, the API's and the console's
// .csv export of a batch: a header, then a row a code (code, template, and
// the user and time, RFC 3339, of its redemption, empty until redeemed).
// It returns the first error of codes or of w; w holds the rows before it.
func WriteCodesCSV(w io.Writer, codes iter.Seq2[RedeemCode, error]) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"code", "templateId", "redeemedBy", "redeemedAt"})
	for c, err := range codes {
		if err != nil {
			cw.Flush()
			return err
		}
		row := []string{c.Code, strconv.FormatInt(c.TemplateID, 10), "", ""}
		if c.UserID != 0 {
			row[2], row[3] = strconv.FormatInt(c.UserID, 10), c.RedeemedAt.Format(time.RFC3339)
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// CodeStore keeps code batches and redeems their codes.
type CodeStore interface {
	// CreateCodeBatch stores b, setting its ID.
	CreateCodeBatch(ctx context.Context, b *CodeBatch) error
	// CodeBatch returns batch id of shop (AnyShop: any), or ErrNotFound.
	CodeBatch(ctx context.Context, shop, id int64) (*CodeBatch, error)
	// AddCodes stores codes in batch id and counts them in Generated, at
	// now; the batch is ready once Generated reaches Count. A code that
	// exists already (in any batch) is ErrConflict and nothing is stored.
	AddCodes(ctx context.Context, id int64, codes []string, now time.Time) (*CodeBatch, error)
	// GeneratingCodeBatches returns the batches still generating, oldest
	// first: what a process that died left to finish.
	GeneratingCodeBatches(ctx context.Context) ([]*CodeBatch, error)
	// CodeBatches returns the batches of template of shop (AnyShop: of
	// any shop), newest first; none if there are none or the template is
	// another shop's.
	CodeBatches(ctx context.Context, shop, template int64) ([]*CodeBatch, error)
	// Codes streams the codes of batch id in code order.
	Codes(ctx context.Context, id int64) iter.Seq2[RedeemCode, error]
	// Code returns code as it stands (its template, and by whom and when
	// it was redeemed); ErrNotFound if there is no such code.
	Code(ctx context.Context, code string) (RedeemCode, error)
	// RedeemCode issues user the coupon of code at now, in one
	// transaction: the template issues at now, the user holds fewer than
	// the limit, received fewer than the period limits today and this
	// week, and stock is left (else the refusal of IssueRefusal: ESOLDOUT,
	// ELIMIT, EDAILYLIMIT, EWEEKLYLIMIT, ENOTSTARTED, EENDED or EPAUSED),
	// then one stock is taken, the coupon
	// created (Source FromCode) and the code marked redeemed. A code
	// redeemed before by the same user returns that coupon; by another
	// user it is ECODEUSED. An unknown code is ErrNotFound.
	RedeemCode(ctx context.Context, code string, user int64, now time.Time) (*Coupon, error)
}

// CodeService is the merchant's and user's side of redemption codes.
type CodeService struct {
	Codes     CodeStore
	Templates TemplateStore
	Cache     Cache // nil: the store alone checks and reserves
	// Rules and Attributes decide the templates' eligibility rules, as
	// for claims; a nil Rules checks none.
	Rules      *RuleBook
	Attributes *AttributeService
	Now        Clock
	Logger     *slog.Logger
	// Chunk is how many codes are generated and stored a transaction; 0
	// means 10,000.
	Chunk int
	// Background bounds the generations in the background: they stop
	// when it ends (and resume later from what they stored). Nil means
	// they run to their end.
	Background context.Context

	wg sync.WaitGroup
}

func (s *CodeService) now() time.Time {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	return now().UTC().Truncate(time.Microsecond)
}

func (s *CodeService) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Logger
}

// Create starts a batch of n codes for template of the merchant's shop and
// returns it generating; the codes are made in the background (Get shows
// the progress). The template must not have ended.
func (s *CodeService) Create(ctx context.Context, who Identity, template, n int64) (*CodeBatch, error) {
	shop, err := who.ShopScope()
	if err != nil {
		return nil, err
	}
	if n < 1 || n > MaxCodeBatch {
		return nil, &Error{Code: EINVALID, Message: "invalid code batch", Fields: []FieldError{{Field: "count", Message: fmt.Sprintf("must be 1 … %d", MaxCodeBatch)}}}
	}
	t, err := s.Templates.Template(ctx, shop, template)
	if err != nil {
		return nil, err
	}
	if t.Status == TemplateEnded {
		return nil, Errorf(ETRANSITION, "template %d has ended: it issues no more coupons", template)
	}
	now := s.now()
	b := &CodeBatch{TemplateID: t.ID, ShopNo: t.ShopNo, Count: n, Status: CodeBatchGenerating, CreatedBy: who.String(), CreatedAt: now, UpdatedAt: now}
	if err := s.Codes.CreateCodeBatch(ctx, b); err != nil {
		return nil, err
	}
	s.Generate(b)
	return b, nil
}

// Generate makes the rest of batch b's codes in the background.
func (s *CodeService) Generate(b *CodeBatch) {
	s.wg.Go(func() {
		ctx := s.Background
		if ctx == nil {
			ctx = context.Background()
		}
		if err := s.generate(ctx, b); err != nil && ctx.Err() == nil {
			s.logger().Error("generate codes", "batch", b.ID, "err", err)
		}
	})
}

// Wait waits for the generations under way.
func (s *CodeService) Wait() { s.wg.Wait() }

// Resume generates the batches a process that died left unfinished.
func (s *CodeService) Resume(ctx context.Context) error {
	bs, err := s.Codes.GeneratingCodeBatches(ctx)
	if err != nil {
		return err
	}
	for _, b := range bs {
		s.Generate(b)
	}
	return nil
}

func (s *CodeService) generate(ctx context.Context, b *CodeBatch) error {
	chunk := int64(s.Chunk)
	if chunk <= 0 {
		chunk = 10_000
	}
	for b.Generated < b.Count {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(chunk, b.Count-b.Generated)
		for attempt := 0; ; attempt++ {
			codes, err := NewCodes(int(n), "")
			if err != nil {
				return err
			}
			next, err := s.Codes.AddCodes(ctx, b.ID, codes, s.now())
			if errors.Is(err, ErrConflict) && attempt < 3 {
				continue // a code that exists: 73 random bits make it all but impossible
			}
			if err != nil {
				return err
			}
			b = next
			break
		}
	}
	s.logger().Info("codes generated", "batch", b.ID, "count", b.Count)
	return nil
}

// Get returns batch id of the merchant's shop.
func (s *CodeService) Get(ctx context.Context, who Identity, id int64) (*CodeBatch, error) {
	shop, err := who.ShopScope()
	if err != nil {
		return nil, err
	}
	return s.Codes.CodeBatch(ctx, shop, id)
}

// List returns the batches of template of the merchant's shop, newest
// first. ErrNotFound if there is no such template (or it is another
// shop's).
func (s *CodeService) List(ctx context.Context, who Identity, template int64) ([]*CodeBatch, error) {
	shop, err := who.ShopScope()
	if err != nil {
		return nil, err
	}
	if _, err := s.Templates.Template(ctx, shop, template); err != nil {
		return nil, err
	}
	return s.Codes.CodeBatches(ctx, shop, template)
}

// Export streams the codes of a ready batch of the merchant's shop.
func (s *CodeService) Export(ctx context.Context, who Identity, id int64) (*CodeBatch, iter.Seq2[RedeemCode, error], error) {
	b, err := s.Get(ctx, who, id)
	if err != nil {
		return nil, nil, err
	}
	if b.Status != CodeBatchReady {
		return nil, nil, Errorf(ETRANSITION, "batch %d is still generating: %d of %d codes made", id, b.Generated, b.Count)
	}
	return b, s.Codes.Codes(ctx, id), nil
}

// Redeem issues the user the coupon of code. A mistyped code (bad check
// symbol) is refused before anything is looked up.
func (s *CodeService) Redeem(ctx context.Context, who Identity, code string) (*Coupon, error) {
	if who.Role != RoleUser {
		return nil, Errorf(EFORBIDDEN, "only users redeem codes")
	}
	code, err := ParseCode(code)
	if err != nil {
		return nil, err
	}
	now := s.now()
	if err := s.eligible(ctx, code, who.UserID, now); err != nil {
		return nil, fmt.Errorf("redeem code: %w", err)
	}
	c, err := s.Codes.RedeemCode(ctx, code, who.UserID, now)
	if err != nil {
		return nil, fmt.Errorf("redeem code: %w", err)
	}
	if s.Cache != nil {
		// Keep the cache's counters in step with the coupon issued: a
		// reservation under the code's key, idempotent, so a redeem
		// answered again counts once (a template the cache does not hold
		// is loaded whole when needed).
		if _, err := s.Cache.Reserve(ctx, c.TemplateID, "code:"+code, []int64{c.UserID}, c.CreatedAt); err != nil && !errors.Is(err, ErrCacheCold) {
			s.logger().Warn("count a redeemed code in the cache", "template", c.TemplateID, "err", err)
		}
	}
	return c, nil
}

// eligible returns ENOTELIGIBLE if the eligibility rule of code's template
// in force at now refuses user, unless the code is redeemed already: the
// store then answers the user's own redeem again, whatever the user's
// facts are now, or anyone else's with ECODEUSED.
func (s *CodeService) eligible(ctx context.Context, code string, user int64, now time.Time) error {
	if s.Rules == nil {
		return nil
	}
	rc, err := s.Codes.Code(ctx, code)
	if err != nil {
		if ErrorCode(err) == ENOTFOUND {
			return Errorf(ENOTFOUND, "no code %s", code)
		}
		return err
	}
	if rc.UserID != 0 {
		return nil
	}
	tr, err := s.Rules.Rules(ctx, rc.TemplateID)
	if err != nil {
		return fmt.Errorf("rules of template %d: %w", rc.TemplateID, err)
	}
	return eligibleBy(ctx, tr, s.Attributes, rc.TemplateID, user, now)
}

// IssueRefusal says why t cannot issue user, holding held coupons of it,
// one more at now, or returns nil: the rules of a single issue (a
// redeemed code) that every store applies. periods are the coupons user
// received in each day and week (needed only when t has period limits;
// nil counts none).
func IssueRefusal(t *Template, user, held int64, periods *PeriodHeld, now time.Time) error {
	switch {
	case t.Status == TemplateEnded || t.Status == TemplateActive && !now.Before(t.IssueEnd):
		return Errorf(EENDED, "template %d no longer issues", t.ID)
	case t.Status != TemplateActive:
		return Errorf(EPAUSED, "template %d does not issue now", t.ID)
	case now.Before(t.IssueStart):
		return Errorf(ENOTSTARTED, "template %d does not issue yet", t.ID)
	case held >= t.PerUserLimit:
		return Errorf(ELIMIT, "you hold as many coupons of template %d as one user may", t.ID)
	}
	switch t.periodRefusal(periods, user, now) {
	case CauseDailyLimit:
		return Errorf(EDAILYLIMIT, "you received as many coupons of template %d today as one user may a day", t.ID)
	case CauseWeeklyLimit:
		return Errorf(EWEEKLYLIMIT, "you received as many coupons of template %d this week as one user may a week", t.ID)
	}
	if t.Stock <= 0 {
		return Errorf(ESOLDOUT, "template %d is sold out", t.ID)
	}
	return nil
}
