package mysql_test

import (
	"database/sql"
	"slices"
	"testing"

	"github.com/quanhq/quan/internal/sqlrow"
	"github.com/quanhq/quan/mysql"
)

// TestClaimReasonCodesMigration: the free-text reasons claims were failed
// with before reasons were codes (a dead letter's, and the reaper's, which
// only the claims table could hold) become the codes, on the claims and
// in the counts, which add up under them.
func TestClaimReasonCodesMigration(t *testing.T) {
	db := openDB(t)
	const abandoned = "abandoned: the claim was not handed off before its process stopped"
	var reasons, counts []string
	text := func(r sqlrow.Scanner) (s string, err error) { return s, r.Scan(&s) }
	err := mysql.InTx(t.Context(), db, func(tx *sql.Tx) error {
		for _, q := range []string{
			`INSERT INTO claims (id, template_id, user_id, status, reason, at, decided_at) VALUES
				('c1-1-a', 1, 1, 'failed', '` + abandoned + `', NOW(), NOW()),
				('c1-2-a', 1, 2, 'failed', 'hand-off failed: nats: timeout', NOW(), NOW()),
				('c1-3-a', 1, 3, 'failed', 'out_of_stock', NOW(), NOW())`,
			`INSERT INTO claim_refusals (template_id, decided_by, code, n) VALUES
				(1, 'store', 'hand-off failed: nats: timeout', 2),
				(1, 'store', 'hand-off failed: no responders', 1),
				(1, 'store', 'handoff_failed', 4),
				(1, 'store', 'out_of_stock', 5),
				(2, 'store', 'hand-off failed: nats: timeout', 6),
				(1, 'cache', 'sold_out', 7)`,
		} {
			if _, err := tx.ExecContext(t.Context(), q); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := mysql.Reapply(t.Context(), db, "0030_claim_reason_codes.sql"); err != nil {
		t.Fatalf("migration again, on the old reasons: %v", err)
	}
	err = mysql.InTx(t.Context(), db, func(tx *sql.Tx) error {
		var err error
		if reasons, err = sqlrow.Query(t.Context(), tx, "claims", text, `SELECT CONCAT(id, ' ', reason) FROM claims ORDER BY id`); err != nil {
			return err
		}
		counts, err = sqlrow.Query(t.Context(), tx, "claim refusals", text, `SELECT CONCAT(template_id, ' ', decided_by, ' ', code, ' ', n)
			FROM claim_refusals ORDER BY template_id, decided_by, code`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"c1-1-a abandoned", "c1-2-a handoff_failed", "c1-3-a out_of_stock"}; !slices.Equal(reasons, want) {
		t.Errorf("claims %q, want %q", reasons, want)
	}
	want := []string{"1 cache sold_out 7", "1 store handoff_failed 7", "1 store out_of_stock 5", "2 store handoff_failed 6"}
	if !slices.Equal(counts, want) {
		t.Errorf("claim_refusals %q, want %q", counts, want)
	}
}
