package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/cmd/quan/internal/app"
	qhttp "github.com/quanhq/quan/http"
)

// TokenCommand mints a bearer token signed with the server's secret.
type TokenCommand struct {
	Main *Main
}

// Run parses args and prints one token on stdout.
func (c *TokenCommand) Run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	data := fs.String("data", "./quan-data", "data folder holding the signing secret")
	secret := fs.String("jwt-secret", "", "signing secret (default: the one in the data folder)")
	role := fs.String("role", "merchant", "merchant, user or admin")
	shop := fs.Int64("shop", 0, "shop number (merchant)")
	user := fs.Int64("user", 0, "user id (user)")
	sub := fs.String("sub", "", "subject (default: role:shop or role:user)")
	ttl := fs.Duration("ttl", 24*time.Hour, "lifetime")
	if _, err := c.Main.parse(fs, args); err != nil {
		return err
	}
	key, err := app.LoadSecret(*data, *secret)
	if err != nil {
		return err
	}
	tokens, err := qhttp.NewTokens(key, nil)
	if err != nil {
		return err
	}
	id := quan.Identity{Subject: *sub, Role: quan.Role(*role), ShopNo: *shop, UserID: *user}
	tok, err := tokens.Mint(id, *ttl)
	if err != nil {
		return fmt.Errorf("mint token: %w", err)
	}
	fmt.Fprintln(c.Main.Stdout, tok)
	return nil
}
