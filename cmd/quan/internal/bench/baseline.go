package bench

import (
	"context"
	"fmt"
	"io"
	"reflect"

	"github.com/quanhq/quan/cmd/quan/internal/app"
	"github.com/quanhq/quan/cmd/quan/internal/bench/mysqlbase"
	"github.com/quanhq/quan/cmd/quan/internal/bench/sqlitebase"
)

// The baselines openBaseline opens are the ports the benchmarks use.
var (
	_ walletBaseline = (*sqlitebase.Baseline)(nil)
	_ walletBaseline = (*mysqlbase.Baseline)(nil)
	_ statsSeeder    = (*sqlitebase.Baseline)(nil)
	_ statsSeeder    = (*mysqlbase.Baseline)(nil)
	_ ingestFloor    = (*sqlitebase.Baseline)(nil)
	_ ingestFloor    = (*mysqlbase.Baseline)(nil)
)

// openBaseline opens the raw-SQL baseline of the engine of cfg's store:
// bare SQL on its database, which the store has migrated, that benchmarks
// set up, check and compare the store with (sqlitebase.Baseline,
// mysqlbase.Baseline). B is the interface the caller uses it through,
// which the caller declares; openBaseline fails if the engine's baseline
// lacks one of its methods. conns is how many connections the baseline's
// raw loop gets where the engine takes several writers.
func openBaseline[B io.Closer](ctx context.Context, cfg app.Config, conns int) (B, error) {
	var (
		zero B
		raw  io.Closer
		err  error
	)
	store, _, _ := app.Kinds(cfg)
	switch store {
	case app.StoreSQLite:
		raw, err = sqlitebase.OpenBaseline(ctx, app.SQLiteFile(cfg))
	case app.StoreMySQL:
		raw, err = mysqlbase.OpenBaseline(ctx, cfg.StoreURL, conns)
	default:
		return zero, fmt.Errorf("--store %q: unknown scheme %q (use sqlite: or mysql://)", cfg.StoreURL, store)
	}
	if err != nil {
		return zero, err
	}
	b, ok := raw.(B)
	if !ok {
		raw.Close()
		return zero, fmt.Errorf("the %s baseline has no %s", store, reflect.TypeFor[B]())
	}
	return b, nil
}
