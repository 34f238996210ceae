package app

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/quanhq/quan"
	qhttp "github.com/quanhq/quan/http"
)

// TestAttributesWired: a server's attribute service imports a file with
// every column read (an attribute column included) into its store, its
// store calls are recorded by the store's metrics, and its API serves the
// attribute routes.
func TestAttributesWired(t *testing.T) {
	ctx := context.Background()
	a, err := Open(ctx, Config{DataDir: t.TempDir()}, Server, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if a.Facts == nil {
		t.Fatal("no AttributeService")
	}
	admin := quan.Identity{Subject: "ops", Role: quan.RoleAdmin}
	res, err := a.Facts.Import(ctx, admin, strings.NewReader("userId,level,vip\n7,2,gold\n"))
	if err != nil || res.Imported != 1 {
		t.Fatalf("Import = %+v, %v", res, err)
	}
	f, err := a.Facts.Facts(ctx, 7)
	if err != nil || f.Level != 2 || f.Attrs["vip"] != "gold" {
		t.Fatalf("Facts(7) = %+v, %v", f, err)
	}
	if n := storeCalls(t, a, "PutUserFacts"); n != 1 {
		t.Errorf("the store's PutUserFacts call is recorded %d times in quan_backend_duration_seconds, want 1", n)
	}
	tokens, err := qhttp.NewTokens([]byte("0123456789abcdef0123456789abcdef"), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := a.HTTPServer(tokens)
	if err != nil {
		t.Fatal(err)
	}
	srv.Handler() // builds the routes
	for _, r := range []string{"GET /api/v1/users/{id}/attributes", "PUT /api/v1/users/{id}/attributes", "POST /api/v1/attributes/import"} {
		if !slices.Contains(srv.Routes(), r) {
			t.Errorf("route %s is not served", r)
		}
	}
}
