package mysql_test

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/mysql"
	"github.com/quanhq/quan/mysql/mysqltest"
)

func TestMeasureFloor(t *testing.T) {
	dsn := mysqltest.DSN(t)
	db, err := mysql.Open(t.Context(), dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	users := make([]int64, 12_345) // more than one statement
	for i := range users {
		users[i] = int64(i*7919%len(users)) + 1
	}
	tpl := &quan.Template{ID: 1, ShopNo: 1, TemplateSpec: quan.TemplateSpec{
		IssueEnd: time.Now().Add(time.Hour), Validity: quan.Validity{Kind: quan.ValidRelative, Hours: 24}}}
	took, err := db.MeasureFloor(t.Context(), quan.NewCoupon(tpl, 0, 1, 1, time.Now()), users, 2)
	if err != nil || took <= 0 {
		t.Fatalf("MeasureFloor = %v, %v", took, err)
	}
	// The scratch table is gone and the coupons untouched.
	s := mysql.NewStore(db)
	if cs, err := s.UserCoupons(t.Context(), users[0], 0); err != nil || len(cs) != 0 {
		t.Errorf("coupons of user %d: %v, %v", users[0], cs, err)
	}
	cfg, _ := mysql.ParseDSN(dsn)
	srv, _ := mysqltest.Server(t)
	var n int
	if err := srv.QueryRow(`SELECT count(*) FROM information_schema.tables WHERE table_schema = ? AND table_name = 'coupons_floor'`,
		cfg.DBName).Scan(&n); err != nil || n != 0 {
		t.Errorf("coupons_floor left: %d (%v)", n, err)
	}
	if _, err := db.MeasureFloor(t.Context(), quan.NewCoupon(tpl, 0, 1, 1, time.Now()), []int64{5, 5}, 1); err == nil {
		t.Error("a user twice: the floor's table has the unique index of coupons, want a duplicate key")
	}
}

func TestCreateDatabase(t *testing.T) {
	srv, cfg := mysqltest.Server(t)
	var b [4]byte
	rand.Read(b[:])
	name := "quan_test_created_" + hex.EncodeToString(b[:])
	for _, dsn := range []string{cfg.FormatDSN(), mysqltest.URL(t)} {
		got, err := mysql.CreateDatabase(t.Context(), dsn, name)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(got, "/"+name) {
			t.Errorf("CreateDatabase(%q) = %q, want it to name %s", dsn, got, name)
		}
		db, err := mysql.Open(t.Context(), got, nil)
		if err != nil {
			t.Fatal(err)
		}
		db.Close()
		if err := mysql.DropDatabase(t.Context(), got); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := srv.QueryRow(`SELECT count(*) FROM information_schema.schemata WHERE schema_name = ?`, name).Scan(&n); err != nil || n != 0 {
			t.Errorf("%s after DropDatabase: %d (%v)", name, n, err)
		}
	}
	if _, err := mysql.CreateDatabase(t.Context(), cfg.FormatDSN(), "bad-name; DROP"); err == nil {
		t.Error("CreateDatabase took a name that is not a word")
	}
}
