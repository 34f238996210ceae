package app

import (
	"context"
	"strings"
	"testing"
)

// TestOpenBackendsRefuses: a configuration that cannot work is refused
// with an error naming the flag and what to use instead, and nothing is
// left open.
func TestOpenBackendsRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"UnknownStore", Config{StoreURL: "oracle://db"}, `--store "oracle://db": unknown scheme "oracle" (use sqlite: or mysql://)`},
		{"UnknownCache", Config{CacheURL: "memcached://x"}, `--cache "memcached://x": unknown cache`},
		{"UnknownBus", Config{BusURL: "kafka://x"}, `--bus "kafka://x": unknown bus`},
		{"SharedBusOnSQLite", Config{BusURL: "nats://127.0.0.1:1"}, "needs a store they share: use --store mysql://"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.DataDir = t.TempDir()
			b, err := OpenBackends(context.Background(), tc.cfg, Server, nil)
			if err == nil {
				b.Close()
				t.Fatalf("opened %+v", tc.cfg)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v, want %q", err, tc.want)
			}
		})
	}
}

// TestOpenRoles: on the embedded default a Server gets a claim bus (an
// in-process NATS server) and the claims service; a Local command and a
// Worker get none, and a Worker told to run no task has nothing to do.
func TestOpenRoles(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		role   Role
		claims bool
	}{{Local, false}, {Worker, false}, {Server, true}} {
		t.Run(tc.role.String(), func(t *testing.T) {
			a, err := Open(ctx, Config{DataDir: t.TempDir()}, tc.role, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			if got := a.Claims != nil; got != tc.claims {
				t.Errorf("claims service: %v, want %v", got, tc.claims)
			}
			if a.Backends.Cache == nil || a.Distributor == nil || a.Tasks == nil || a.Templates == nil {
				t.Errorf("missing a use case or the in-process cache: %+v", a)
			}
			if err := a.Start(); err != nil {
				t.Fatal(err)
			}
			a.Close()
			a.Close() // twice is safe
		})
	}
	if a, err := Open(ctx, Config{DataDir: t.TempDir(), Runner: Runner{Off: true}}, Worker, nil); err == nil || !strings.Contains(err.Error(), "nothing to do") {
		if a != nil {
			a.Close()
		}
		t.Errorf("worker --runner=false on the embedded bus: %v", err)
	}
}
