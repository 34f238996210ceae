package mysql_test

import (
	"context"
	"database/sql"
	"sync"
	"testing"

	"github.com/quanhq/quan/mysql"
)

// TestStoreRetriesCountsDeadlocks: two transactions that lock two rows in
// opposite orders deadlock; InnoDB rolls one back, the store runs it
// again, and StoreRetries counts it.
func TestStoreRetriesCountsDeadlocks(t *testing.T) {
	db := openDB(t)
	s := mysql.NewStore(db)
	ctx := t.Context()
	if err := mysql.InTx(ctx, db, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `CREATE TABLE retry_test (id INT PRIMARY KEY, v INT NOT NULL)`); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO retry_test VALUES (1, 0), (2, 0)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if n := s.StoreRetries(); n != 0 {
		t.Fatalf("StoreRetries before any contention = %d", n)
	}
	// Each holds its first row before either asks for its second: the
	// first attempts deadlock for sure; the retry goes through.
	var held sync.WaitGroup
	held.Add(2)
	run := func(first, second int) error {
		var once sync.Once
		return mysql.InTx(ctx, db, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `UPDATE retry_test SET v = v + 1 WHERE id = ?`, first); err != nil {
				return err
			}
			once.Do(func() {
				held.Done()
				held.Wait()
			})
			_, err := tx.ExecContext(ctx, `UPDATE retry_test SET v = v + 1 WHERE id = ?`, second)
			return err
		})
	}
	errs := make(chan error, 2)
	go func() { errs <- run(1, 2) }()
	go func() { errs <- run(2, 1) }()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("a transaction failed rather than retry: %v", err)
		}
	}
	if n := s.StoreRetries(); n < 1 {
		t.Errorf("StoreRetries after a deadlock = %d, want at least 1", n)
	}
	var v1, v2 int
	if err := mysql.InTx(context.Background(), db, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT (SELECT v FROM retry_test WHERE id = 1), (SELECT v FROM retry_test WHERE id = 2)`).Scan(&v1, &v2)
	}); err != nil || v1 != 2 || v2 != 2 {
		t.Errorf("rows after both committed: %d, %d, %v; want 2, 2", v1, v2, err)
	}
}
