package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/apikeys"
	"github.com/quanhq/quan/cmd/quan/internal/app"
	"github.com/quanhq/quan/cmd/quan/internal/cli"
)

// APIKeyCommand makes, lists and revokes service keys on the store, as an
// admin would in the console.
type APIKeyCommand struct {
	Main *Main
}

const apikeyUsage = `Usage:
  quan apikey create --name NAME --scopes a,b [--shop SHOP]   make a service key; it is printed once, on the last line
  quan apikey list                                           list the keys (never their secrets)
  quan apikey revoke ID                                      revoke a key: every process refuses it within 5 seconds

Scopes: settlement, redeem, coupons:read, templates, tasks, claims (the platform's only).
A key with --shop reaches that shop's coupons and templates only; without, the platform's.
Programs send it as 'Authorization: Bearer qk_…'. 'quan apikey ACTION -h' lists an action's flags.
`

// Run parses `apikey ACTION [flags] [ID]` and does it.
func (c *APIKeyCommand) Run(ctx context.Context, args []string) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && cli.IsHelp(args[0]) {
			fmt.Fprint(c.Main.Stdout, apikeyUsage)
			return cli.ErrHelp
		}
		return &cli.UsageError{Msg: "apikey: want an action: create, list or revoke", Cmd: "apikey"}
	}
	action := args[0]
	fs := flag.NewFlagSet("apikey "+action, flag.ContinueOnError)
	var cfg app.Config
	fs.StringVar(&cfg.DataDir, "data", "./quan-data", "data folder (the SQLite database)")
	fs.StringVar(&cfg.StoreURL, "store", "sqlite:", "store: sqlite:[PATH] (default PATH: DATA/quan.db) or mysql://USER[:PASS]@HOST[:PORT]/DB")
	fs.StringVar(&cfg.LogLevel, "log-level", "warn", "debug, info, warn or error")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "%s\nFlags of quan apikey %s:\n", apikeyUsage, action)
		fs.PrintDefaults()
	}
	var (
		name, scopes string
		shop         int64
		argNames     []string
	)
	switch action {
	case "create":
		fs.StringVar(&name, "name", "", "what the key is for, e.g. \"order system\" (required)")
		fs.StringVar(&scopes, "scopes", "", "comma-separated scopes (required)")
		fs.Int64Var(&shop, "shop", 0, "the shop owning the key (default: the platform)")
	case "list":
	case "revoke":
		argNames = []string{"ID"}
	default:
		return &cli.UsageError{Msg: fmt.Sprintf("apikey: unknown action %q: want create, list or revoke", action), Cmd: "apikey"}
	}
	pos, err := c.Main.parse(fs, args[1:], argNames...)
	if err != nil {
		return err
	}
	var in apikeys.NewKey
	var id int64
	switch action {
	case "create":
		in = apikeys.NewKey{Name: name, ShopNo: shop, Scopes: nil}
		sc, err := quan.ParseScopes("scopes", scopes)
		if err != nil {
			return keyUsage(err)
		}
		in.Scopes = sc
		k := &quan.APIKey{Name: strings.TrimSpace(in.Name), ShopNo: in.ShopNo, Scopes: in.Scopes}
		if err := k.Validate(); err != nil {
			return keyUsage(err)
		}
	case "revoke":
		if _, err := fmt.Sscan(pos[0], &id); err != nil || id <= 0 {
			return cli.Usagef("apikey revoke: ID %q: want a key's id, as apikey list shows it", pos[0])
		}
	}

	cfg.MetricsOff = true
	cfg.Now = c.Main.Now
	logger, err := cfg.NewLogger(c.Main.Stderr)
	if err != nil {
		return err
	}
	a, err := app.Open(ctx, cfg, app.Local, logger)
	if err != nil {
		return err
	}
	defer a.Close()
	keys := a.Keys

	switch action {
	case "create":
		k, secret, err := keys.Create(ctx, cliAdmin, in)
		if err != nil {
			return fmt.Errorf("apikey create: %w", err)
		}
		fmt.Fprintf(c.Main.Stdout, "made service key %d %q of %s, scopes %s\n", k.ID, k.Name, owner(k.ShopNo), joinScopes(k.Scopes))
		fmt.Fprintln(c.Main.Stdout, "the key is shown this once: keep it now (it is stored only as a hash); send it as Authorization: Bearer KEY")
		fmt.Fprintln(c.Main.Stdout, secret)
	case "list":
		ks, err := keys.List(ctx, cliAdmin)
		if err != nil {
			return fmt.Errorf("apikey list: %w", err)
		}
		w := tabwriter.NewWriter(c.Main.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "ID\tNAME\tOWNER\tSCOPES\tKEY\tCREATED\tLAST USED\tSTATUS")
		for _, k := range ks {
			used, status := "never", "active"
			if !k.LastUsedAt.IsZero() {
				used = k.LastUsedAt.Format(time.RFC3339)
			}
			if k.Revoked() {
				status = "revoked " + k.RevokedAt.Format(time.RFC3339)
			}
			fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s…\t%s\t%s\t%s\n", k.ID, k.Name, owner(k.ShopNo), joinScopes(k.Scopes), k.Hint,
				k.CreatedAt.Format(time.RFC3339), used, status)
		}
		w.Flush()
		fmt.Fprintf(c.Main.Stdout, "%d keys\n", len(ks))
	case "revoke":
		k, err := keys.Revoke(ctx, cliAdmin, id)
		if err != nil {
			return fmt.Errorf("apikey revoke: %w", err)
		}
		fmt.Fprintf(c.Main.Stdout, "revoked service key %d %q: every process refuses it within %s\n", k.ID, k.Name, apikeys.DefaultCacheFor)
	}
	return nil
}

// keyFlags name, for each field of a key, its flag.
var keyFlags = map[string]string{"name": "--name", "shopNo": "--shop", "scopes": "--scopes"}

// keyUsage turns the EINVALID of a key's fields into a usage error naming
// their flags.
func keyUsage(err error) error {
	if quan.ErrorCode(err) != quan.EINVALID {
		return fmt.Errorf("apikey: %w", err)
	}
	var msgs []string
	for _, fe := range quan.ErrorFields(err) {
		msgs = append(msgs, keyFlags[fe.Field]+": "+fe.Message)
	}
	return cli.Usagef("apikey create: %s", strings.Join(msgs, "; "))
}

func owner(shop int64) string {
	if shop == 0 {
		return "the platform"
	}
	return fmt.Sprintf("shop %d", shop)
}

func joinScopes(scopes []quan.KeyScope) string {
	s := make([]string, len(scopes))
	for i, sc := range scopes {
		s[i] = string(sc)
	}
	return strings.Join(s, ",")
}
