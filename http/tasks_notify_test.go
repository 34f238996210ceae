package http_test

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/quanhq/quan"
	qhttp "github.com/quanhq/quan/http"
	"github.com/xuri/excelize/v2"
)

// TestTaskNotificationsAPI: a file with phone and mail columns uploaded
// with notify=inbox,sms issues its coupons, every holder sees the task's
// inbox entry, and the task shows its SMS queued, or failed for the rows
// without a usable number, which the failed notifications CSV lists with
// the numbers masked, and so does failures.xlsx.
func TestTaskNotificationsAPI(t *testing.T) {
	ts := newTestServer(t)
	m := ts.merchant(t, 1001)
	admin := ts.token(t, quan.Identity{Role: quan.RoleAdmin, Subject: "ops"})
	ts.do(t, "PUT", "/api/v1/users/3/contact", admin, map[string]any{"phone": "13900000003"}).want(t, http.StatusOK, "")
	tpl := ts.activeTemplate(t, m, 100, 1)
	file := "userId,mobile,email\n" +
		"1,138 1234 5678,one@example.com\n" + // the row's number
		"2,,\n" + // none anywhere: no_contact
		"3,,\n" + // the number on file
		"4,1381234567890,\n" + // 13 digits: invalid_contact
		"x,13800000000,\n" // no coupon, no message
	task := ts.distribute(t, m, tpl.ID, "users.csv", []byte(file), map[string]string{"notify": "inbox,sms"})
	if task.Status != quan.TaskSucceeded || task.Counts.Issued != 4 {
		t.Fatalf("task %s, issued %d; want succeeded with 4", task.Status, task.Counts.Issued)
	}

	// Every holder sees the task's one inbox entry.
	for _, u := range []int64{1, 2, 4} {
		var p struct {
			Items []quan.Notice
			Total int
		}
		ts.do(t, "GET", "/api/v1/me/inbox", ts.user(t, u), nil).decode(t, &p)
		if p.Total != 1 || p.Items[0].Kind != quan.MessageIssued || p.Items[0].TaskID != task.ID ||
			!strings.Contains(p.Items[0].Text, "已发放到您的账户") {
			t.Errorf("user %d's inbox %+v; want the task's entry", u, p)
		}
	}

	want := map[quan.NotifyType]quan.ChannelCounts{
		quan.NotifyInbox: {Sent: 1, Total: 1, Broadcast: true, Recipients: 4},
		quan.NotifySMS:   {Queued: 2, Failed: 2, Total: 4, Recipients: 4},
	}
	check := func(where string, n *qhttp.NotificationsView) {
		t.Helper()
		if n == nil {
			t.Fatalf("%s: no notifications", where)
		}
		if !slices.Equal(n.Channels, []quan.NotifyType{quan.NotifyInbox, quan.NotifySMS}) || len(n.ByChannel) != 2 ||
			n.ByChannel[quan.NotifyInbox] != want[quan.NotifyInbox] || n.ByChannel[quan.NotifySMS] != want[quan.NotifySMS] {
			t.Errorf("%s: %+v, want %+v", where, n.TaskNotifications, want)
		}
		if csvURL := fmt.Sprintf("/api/v1/tasks/%d/notifications/failures.csv", task.ID); n.FailuresCSV != csvURL {
			t.Errorf("%s: failures at %q, want %q", where, n.FailuresCSV, csvURL)
		}
	}
	var n qhttp.NotificationsView
	ts.do(t, "GET", fmt.Sprintf("/api/v1/tasks/%d/notifications", task.ID), m, nil).decode(t, &n)
	check("GET /tasks/{id}/notifications", &n)
	var v qhttp.TaskView
	ts.do(t, "GET", fmt.Sprintf("/api/v1/tasks/%d", task.ID), m, nil).decode(t, &v)
	check("GET /tasks/{id}", v.Notifications)

	r := ts.do(t, "GET", n.FailuresCSV, m, nil)
	r.want(t, http.StatusOK, "")
	if ct := r.Header.Get("Content-Type"); ct != "text/csv; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	rows, err := csv.NewReader(strings.NewReader(string(r.Body))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	got := make([]string, len(rows))
	for i, row := range rows {
		got[i] = strings.Join(row[:4], "|")
	}
	if want := []string{"用户ID User ID|渠道 Channel|地址 Address|原因 Reason", "2|sms||no_contact", "4|sms|138******7890|invalid_contact"}; !slices.Equal(got, want) {
		t.Errorf("failures.csv:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// The same rows as a workbook, headed like the task failure report.
	if xlsxURL := fmt.Sprintf("/api/v1/tasks/%d/notifications/failures.xlsx", task.ID); n.FailuresXLSX != xlsxURL || v.Notifications.FailuresXLSX != xlsxURL {
		t.Errorf("failures.xlsx at %q and %q, want %q", n.FailuresXLSX, v.Notifications.FailuresXLSX, xlsxURL)
	}
	r = ts.do(t, "GET", n.FailuresXLSX, m, nil)
	r.want(t, http.StatusOK, "")
	if ct := r.Header.Get("Content-Type"); !strings.Contains(ct, "spreadsheetml") {
		t.Errorf("failures.xlsx Content-Type %q", ct)
	}
	f, err := excelize.OpenReader(bytes.NewReader(r.Body))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sheetRows, err := f.GetRows(f.GetSheetList()[0])
	if err != nil {
		t.Fatal(err)
	}
	got = make([]string, len(sheetRows))
	for i, row := range sheetRows {
		got[i] = strings.Join(row, "|")
	}
	if want := []string{
		"用户ID User ID|渠道 Channel|地址 Address|原因 Reason|说明 Details",
		"2|sms||no_contact|" + quan.DescribeReason(quan.ReasonNoContact),
		"4|sms|138******7890|invalid_contact|" + quan.DescribeReason(quan.ReasonInvalidContact),
	}; !slices.Equal(got, want) {
		t.Errorf("failures.xlsx:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// Another shop's merchant sees nothing of it.
	other := ts.merchant(t, 2002)
	ts.do(t, "GET", fmt.Sprintf("/api/v1/tasks/%d/notifications", task.ID), other, nil).want(t, http.StatusNotFound, quan.ENOTFOUND)
	ts.do(t, "GET", n.FailuresCSV, other, nil).want(t, http.StatusNotFound, quan.ENOTFOUND)
	ts.do(t, "GET", n.FailuresXLSX, other, nil).want(t, http.StatusNotFound, quan.ENOTFOUND)
	// A task that notifies on no channel shows none in GET /tasks/{id}.
	quiet := ts.distribute(t, m, tpl.ID, "more.csv", []byte("userId\n9\n"), nil)
	if quiet.Notifications != nil {
		t.Errorf("a task without channels shows %+v", quiet.Notifications)
	}
}
