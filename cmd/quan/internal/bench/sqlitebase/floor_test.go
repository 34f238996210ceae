package sqlitebase

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/sqlite"
)

// TestIngestFloor inserts the floor's coupons into a table like coupons,
// with every index of it, and leaves no file behind.
func TestIngestFloor(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "quan.db")
	db, err := sqlite.Open(t.Context(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	b, err := OpenBaseline(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	schema, err := couponSchema(t.Context(), b.db)
	if err != nil {
		t.Fatal(err)
	}
	var indexes int
	if err := b.db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = 'coupons' AND sql IS NOT NULL`).Scan(&indexes); err != nil {
		t.Fatal(err)
	}
	if len(schema) != 1+indexes {
		t.Fatalf("floor schema %q for coupons with %d indexes", schema, indexes)
	}
	tpl := &quan.Template{ID: 1, ShopNo: 1, TemplateSpec: quan.TemplateSpec{Validity: quan.Validity{Kind: quan.ValidRelative, Hours: 72}}}
	users := make([]int64, 3000)
	for i := range users {
		users[i] = int64(3000 - i) // not in order: the store sorts a chunk
	}
	took, perInsert, err := b.IngestFloor(t.Context(), quan.NewCoupon(tpl, 0, 1, 1, time.Now()), users, 2)
	if err != nil || took <= 0 || perInsert != sqlite.InsertBatchRows {
		t.Fatalf("floor: %s, %d rows a statement, %v", took, perInsert, err)
	}
	for _, f := range []string{"floor.db", "floor.db-wal", "floor.db-shm"} {
		if _, err := os.Stat(filepath.Join(dir, f)); !os.IsNotExist(err) {
			t.Errorf("%s left behind: %v", f, err)
		}
	}
}
