package sqlite

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/internal/sqlrow"
)

// searchSQL is the query SearchCoupons runs for f.
func searchSQL(f quan.CouponFilter) string {
	where, _ := sqlrow.SearchWhere(f, func(t time.Time) any { return micros(t) })
	return `SELECT ` + couponColumns + ` FROM coupons WHERE ` + where + ` ORDER BY id DESC LIMIT ?`
}

// historySQL is the query CouponEvents runs.
func historySQL() string {
	q, _ := sqlrow.CouponHistorySQL(1, 1)
	return q + ` ORDER BY e.id`
}

// TestQueryPlans pins the index each hot query searches, so that a schema
// change that turns a search into a scan fails here rather than at a
// million rows.
func TestQueryPlans(t *testing.T) {
	db, err := Open(t.Context(), filepath.Join(t.TempDir(), "quan.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, c := range []struct {
		name, query string
		want        []string // in the plan, in order
	}{
		{"ClaimTask", claimSQL, []string{
			"SEARCH tasks USING INDEX tasks_status_send_at (status=?)",
			"SEARCH tasks USING INDEX tasks_status_send_at (status=?)"}},
		{"held counts", heldCountsSQL(3), []string{
			"SEARCH coupons USING COVERING INDEX coupons_user_template_seq (user_id=? AND template_id=?)"}},
		{"coupons just inserted", insertedSQL, []string{
			"SEARCH coupons USING INTEGER PRIMARY KEY (rowid>?)"}},
		{"holdings and the claims they record", holdingsSQL(3), []string{
			"SEARCH coupons USING INDEX coupons_user_template_seq (user_id=? AND template_id=?)"}},
		{"claim issued", issuedOneSQL, []string{
			"SEARCH coupons USING INDEX coupons_user_template_seq (user_id=? AND template_id=?)"}},
		{"last coupon id", `SELECT coalesce(max(id), 0) FROM coupons`, []string{"SEARCH coupons"}},
		{"UserCoupons", `SELECT ` + couponColumns + ` FROM coupons INDEXED BY coupons_user_template_seq WHERE user_id = ? AND template_id = ? ORDER BY id DESC`, []string{
			"SEARCH coupons USING INDEX coupons_user_template_seq (user_id=? AND template_id=?)"}},
		// A range of the template's coupons, grouped in a sort.
		{"CouponStats", statsSQL, []string{"SEARCH coupons USING INDEX coupons_template_id (template_id=?)"}},
		{"LapseCoupons available", lapseAvailableSQL, []string{
			"SEARCH coupons USING COVERING INDEX coupons_available_valid_end (status=? AND valid_end<?)"}},
		{"LapseCoupons locked", lapseLockedSQL, []string{
			"SEARCH coupons USING COVERING INDEX coupons_status_locked_until (status=? AND locked_until<?)"}},
		{"OrderCoupons", `SELECT ` + couponColumns + ` FROM coupons WHERE user_id = ? AND (order_id = ? OR id IN (?, ?)) ORDER BY id`, []string{
			"SEARCH coupons USING INDEX coupons_user_template_seq (user_id=?)"}},
		{"Failures", `SELECT line, raw, cause FROM task_failures WHERE task_id = ? AND line > ? ORDER BY line LIMIT ?`, []string{
			"SEARCH task_failures USING PRIMARY KEY (task_id=? AND line>?)"}},
		{"TaskStatuses", taskStatusesSQL, []string{"SCAN tasks USING COVERING INDEX tasks_status_send_at"}},
		{"OldestRunningTask", oldestRunningSQL, []string{"SEARCH tasks USING INDEX tasks_status_send_at (status=?)"}},
		{"OldestAvailableEnd", oldestAvailableSQL, []string{"SEARCH coupons USING COVERING INDEX coupons_available_valid_end"}},
		{"SearchCoupons by user", searchSQL(quan.CouponFilter{UserID: 7, ShopNo: 1, Before: 9}), []string{
			"SEARCH coupons USING INDEX coupons_user_template_seq (user_id=?)"}},
		{"SearchCoupons by code", searchSQL(quan.CouponFilter{ID: 7, ShopNo: 1}), []string{
			"SEARCH coupons USING INTEGER PRIMARY KEY (rowid=?)"}},
		{"SearchCoupons by template", searchSQL(quan.CouponFilter{TemplateID: 7, ShopNo: 1, Before: 9}), []string{
			"SEARCH coupons USING INDEX coupons_template_id (template_id=? AND id<?)"}},
		{"SearchCoupons by template and status", searchSQL(quan.CouponFilter{TemplateID: 7, Status: quan.CouponUsed, ShopNo: 1, Before: 9}), []string{
			"SEARCH coupons USING INDEX coupons_template_status_id (template_id=? AND status=? AND id<?)"}},
		{"SearchCoupons by task", searchSQL(quan.CouponFilter{TaskID: 7, ShopNo: 1, Before: 9}), []string{
			"SEARCH coupons USING INDEX coupons_task_id (task_id=? AND id<?)"}},
		{"CouponEvents", historySQL(), []string{"SEARCH e USING INDEX events_object (object_id=?)"}},
		{"CouponAudits", `SELECT id FROM coupon_audit WHERE coupon_id = ? AND shop_no = ? ORDER BY id`, []string{
			"SEARCH coupon_audit USING INDEX coupon_audit_coupon (coupon_id=?)"}},
		{"Tasks", `SELECT ` + taskColumns + ` FROM tasks WHERE shop_no = ? AND status = ? ORDER BY id DESC LIMIT ? OFFSET ?`, []string{
			"SEARCH tasks USING INDEX tasks_shop_id (shop_no=?)"}},
	} {
		// EXPLAIN QUERY PLAN needs no values: distinct literals stand in
		// for the parameters.
		next := 100
		query := regexp.MustCompile(`\?[0-9]*`).ReplaceAllStringFunc(c.query, func(p string) string {
			if p != "?" {
				return p[1:]
			}
			next++
			return strconv.Itoa(next)
		})
		rows, err := db.read.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+query)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		all := strings.Join(plan, "\n")
		rest := all
		for _, w := range c.want {
			i := strings.Index(rest, w)
			if i < 0 {
				t.Errorf("%s: the plan lacks %q:\n%s", c.name, w, all)
				break
			}
			rest = rest[i+len(w):]
		}
	}
}
