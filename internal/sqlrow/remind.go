package sqlrow

import (
	"database/sql"
	"time"

	"github.com/quanhq/quan"
)

// ScanDue reads a reminder due from a row of the columns user_id,
// coupon_id, valid_end, phone, mail, lang, in that order; coupon_id and
// valid_end may be NULL (an opening reminder), and the contact's columns
// NULL for a user without one on file.
func ScanDue(row Scanner) (quan.DueReminder, error) {
	var (
		d                 quan.DueReminder
		coupon            sql.NullInt64
		phone, mail, lang sql.NullString
	)
	if err := row.Scan(&d.UserID, &coupon, NullTime(&d.ValidEnd), &phone, &mail, &lang); err != nil {
		return d, err
	}
	d.CouponID = coupon.Int64
	d.Contact = quan.Contact{UserID: d.UserID, Phone: phone.String, Mail: mail.String, Lang: quan.Lang(lang.String)}
	return d, nil
}

// ScanSubscriptionView reads a subscription as its user lists it from a
// row of the columns template_id, user_id, created_at, notified_at, name,
// issue_start, remind_lead (seconds), in that order.
func ScanSubscriptionView(row Scanner) (*quan.SubscriptionView, error) {
	var (
		v    quan.SubscriptionView
		lead int64
	)
	if err := row.Scan(&v.TemplateID, &v.UserID, Time(&v.CreatedAt), NullTime(&v.NotifiedAt),
		&v.Name, Time(&v.IssueStart), &lead); err != nil {
		return nil, err
	}
	spec := quan.TemplateSpec{RemindLead: quan.Duration(time.Duration(lead) * time.Second)}
	v.RemindAt = v.IssueStart.Add(-spec.OpeningLead())
	return &v, nil
}
