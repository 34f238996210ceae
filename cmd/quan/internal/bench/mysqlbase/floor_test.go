package mysqlbase_test

import (
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/cmd/quan/internal/bench/mysqlbase"
	"github.com/quanhq/quan/mysql"
	"github.com/quanhq/quan/mysql/mysqltest"
)

// TestIngestFloor times a floor of more than one statement and checks it
// leaves nothing behind and writes what the store's unique index allows.
func TestIngestFloor(t *testing.T) {
	dsn := mysqltest.DSN(t)
	db, err := mysql.Open(t.Context(), dsn, nil) // migrates
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	b, err := mysqlbase.OpenBaseline(t.Context(), dsn, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	users := make([]int64, 12_345) // more than one statement
	for i := range users {
		users[i] = int64(i*7919%len(users)) + 1
	}
	tpl := &quan.Template{ID: 1, ShopNo: 1, TemplateSpec: quan.TemplateSpec{
		IssueEnd: time.Now().Add(time.Hour), Validity: quan.Validity{Kind: quan.ValidRelative, Hours: 24}}}
	took, rows, err := b.IngestFloor(t.Context(), quan.NewCoupon(tpl, 0, 1, 1, time.Now()), users, 2)
	if err != nil || took <= 0 || rows != mysql.InsertRows {
		t.Fatalf("IngestFloor = %v, %d, %v", took, rows, err)
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
	if _, _, err := b.IngestFloor(t.Context(), quan.NewCoupon(tpl, 0, 1, 1, time.Now()), []int64{5, 5}, 1); err == nil {
		t.Error("a user twice: the floor's table has the unique index of coupons, want a duplicate key")
	}
}
