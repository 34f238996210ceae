package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/quanhq/quan/inmem"
	"github.com/quanhq/quan/nats"
	"github.com/quanhq/quan/quantest"
	"github.com/quanhq/quan/sqlite"
)

// TestDistribution runs the shared-distribution suite on the embedded
// backends: SQLite, the in-process cache and an embedded NATS server.
func TestDistribution(t *testing.T) {
	quantest.TestDistribution(t, func(t *testing.T) quantest.Backends {
		s := sqlite.NewStore(openDB(t, filepath.Join(t.TempDir(), "quan.db")))
		srv, err := nats.StartEmbedded(t.Context(), t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Close)
		bus, err := srv.Bus(t.Context(), nats.Config{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { bus.Close() }) // before the server: cleanups run last first
		return quantest.Backends{
			TaskStores: quantest.TaskStores{Templates: s, Tasks: s, Coupons: s},
			Cache:      inmem.NewCache(),
			Bus:        bus,
		}
	})
}
