package mysql_test

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/quanhq/quan/mysql"
	"github.com/quanhq/quan/mysql/mysqltest"
)

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
