package sqlite

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestNotifyQueryPlans pins the indexes the notification queries search
// (see TestQueryPlans): the inbox of one user must stay a few index
// searches however many notifications and coupons the store holds.
func TestNotifyQueryPlans(t *testing.T) {
	db, err := Open(t.Context(), filepath.Join(t.TempDir(), "quan.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// The user's own entries, then the broadcasts of its coupons' tasks
	// (coupons and archived coupons along their user indexes), then the
	// marks by primary key.
	mine := func(channel string) []string {
		return []string{
			"SEARCH notifications USING COVERING INDEX notifications_" + channel + " (user_id=?)",
			"SEARCH notifications USING COVERING INDEX notifications_broadcast (task_id=? AND channel=?)",
			"SEARCH coupons USING INDEX coupons_user_template_seq (user_id=?)",
			"SEARCH coupons_archive USING INDEX coupons_archive_user (user_id=?)",
		}
	}
	for _, c := range []struct {
		name, query string
		want        []string
	}{
		{"take", takeSQL, []string{"SEARCH notifications USING INDEX notifications_due (channel=? AND next_at<?)"}},
		{"counts", countsSQL, []string{"SEARCH notifications USING COVERING INDEX notifications_failed (source=?)", "USE TEMP B-TREE FOR ORDER BY"}},
		{"failed", failedSQL, []string{"SEARCH notifications USING INDEX notifications_failed (source=? AND status=? AND channel=? AND rowid>?)"}},
		{"inbox", entriesSQL("inbox", true) + ` ORDER BY n.id DESC LIMIT ?2 OFFSET ?3`, append(mine("inbox"),
			"SEARCH n USING INTEGER PRIMARY KEY (rowid=?)",
			"SEARCH m USING INDEX sqlite_autoindex_notification_marks_1 (notification_id=? AND user_id=?)")},
		{"unread count", countSQL("inbox", true), append(mine("inbox"),
			"SEARCH m USING COVERING INDEX sqlite_autoindex_notification_marks_1 (notification_id=? AND user_id=?)")},
		{"popups", entriesSQL("popup", true) + ` AND (n.expires_at IS NULL OR n.expires_at > ?2) ORDER BY n.id DESC LIMIT ?3`, mine("popup")},
		{"delete marks", deleteMarksSQL, []string{"SEARCH notification_marks USING COVERING INDEX notification_marks_created (created_at<?)"}},
		{"delete in-app", deleteInAppSQL, []string{"SEARCH notifications USING INDEX notifications_in_app_created (created_at<?)"}},
	} {
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
		for _, w := range c.want {
			if !strings.Contains(all, w) {
				t.Errorf("%s: the plan lacks %q:\n%s", c.name, w, all)
			}
		}
		if strings.Contains(all, "SCAN notifications") || strings.Contains(all, "SCAN coupons") {
			t.Errorf("%s: the plan scans a table:\n%s", c.name, all)
		}
	}
}
