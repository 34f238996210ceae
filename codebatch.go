package quan

import (
	"context"
	"encoding/csv"
	"io"
	"iter"
	"strconv"
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
	switch t.PeriodRefusal(periods, user, now) {
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
