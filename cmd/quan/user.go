package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"github.com/quanhq/quan"
	"github.com/quanhq/quan/accounts"
	"github.com/quanhq/quan/cmd/quan/internal/app"
	"github.com/quanhq/quan/cmd/quan/internal/cli"
)

// UserCommand manages the operator console's accounts on the store, as
// an admin would in the console: the way to make the first admin.
type UserCommand struct {
	Main *Main
}

// cliAdmin is who the command acts as: an admin whose subject no account
// can have (a space is not allowed in a name), so that no account is
// taken for the command's own.
var cliAdmin = quan.Identity{Subject: "command line", Role: quan.RoleAdmin}

const userUsage = `Usage:
  quan user add --role merchant --shop SHOP NAME   add a merchant's operator (password from the terminal or stdin)
  quan user add --role admin NAME                  add an admin, who sees every shop
  quan user list [--shop SHOP] [--name TEXT]       list the accounts
  quan user disable NAME                           refuse its sign-ins and end its sessions
  quan user enable NAME                            let it sign in again
  quan user passwd NAME                            set its password (from the terminal or stdin); ends its sessions

On a terminal the password is asked for twice, without echo; otherwise
it is the first line of stdin. Names are 1 to 64 of A-Z a-z 0-9 . _ @ -,
unique in any case; passwords 10 to 128 bytes. 'quan user ACTION -h'
lists an action's flags.
`

// Run parses `user ACTION [flags] [NAME]` and does it.
func (c *UserCommand) Run(ctx context.Context, args []string) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && cli.IsHelp(args[0]) {
			fmt.Fprint(c.Main.Stdout, userUsage)
			return cli.ErrHelp
		}
		return &cli.UsageError{Msg: "user: want an action: add, list, disable, enable or passwd", Cmd: "user"}
	}
	action := args[0]
	fs := flag.NewFlagSet("user "+action, flag.ContinueOnError)
	var cfg app.Config
	fs.StringVar(&cfg.DataDir, "data", "./quan-data", "data folder (the SQLite database)")
	fs.StringVar(&cfg.StoreURL, "store", "sqlite:", "store: sqlite:[PATH] (default PATH: DATA/quan.db) or mysql://USER[:PASS]@HOST[:PORT]/DB")
	fs.StringVar(&cfg.LogLevel, "log-level", "warn", "debug, info, warn or error")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "%s\nFlags of quan user %s:\n", userUsage, action)
		fs.PrintDefaults()
	}
	var (
		role, name string
		shop       int64
		argNames   = []string{"NAME"}
	)
	switch action {
	case "add":
		fs.StringVar(&role, "role", "", "merchant or admin (required)")
		fs.Int64Var(&shop, "shop", 0, "the merchant's shop number (merchants only)")
	case "list":
		fs.Int64Var(&shop, "shop", 0, "only the accounts of this shop (default: every shop)")
		fs.StringVar(&name, "name", "", "only the accounts whose name holds this text, in any case")
		argNames = nil
	case "disable", "enable", "passwd":
	default:
		return &cli.UsageError{Msg: fmt.Sprintf("user: unknown action %q: want add, list, disable, enable or passwd", action), Cmd: "user"}
	}
	pos, err := c.Main.parse(fs, args[1:], argNames...)
	if err != nil {
		return err
	}
	var in accounts.NewAccount
	if action == "add" {
		// Every rule but the password's is checked before the password is
		// asked for, and named by its flag.
		in = accounts.NewAccount{Name: pos[0], Role: quan.Role(role), ShopNo: shop}
		if err := addError(in.Validate(), "password"); err != nil {
			return err
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
	accounts := a.Accounts

	switch action {
	case "add":
		if in.Password, err = c.password(in.Name); err != nil {
			return err
		}
		acct, err := accounts.Add(ctx, cliAdmin, in)
		if err != nil {
			return addError(err, "")
		}
		shopText := "every shop"
		if acct.ShopNo != 0 {
			shopText = fmt.Sprintf("shop %d", acct.ShopNo)
		}
		fmt.Fprintf(c.Main.Stdout, "added %s %q (id %d) of %s\n", acct.Role, acct.Name, acct.ID, shopText)
		return nil
	case "list":
		return c.list(ctx, accounts, quan.AccountFilter{ShopNo: shop, NameContains: name})
	}

	acct, err := accounts.GetByName(ctx, cliAdmin, pos[0])
	if err != nil {
		return fmt.Errorf("user %s: %w", action, err)
	}
	switch action {
	case "disable", "enable":
		if _, err := accounts.SetDisabled(ctx, cliAdmin, acct.ID, action == "disable"); err != nil {
			return fmt.Errorf("user %s %q: %w", action, acct.Name, err)
		}
		if action == "disable" {
			fmt.Fprintf(c.Main.Stdout, "disabled %q: it cannot sign in, and its sessions ended\n", acct.Name)
		} else {
			fmt.Fprintf(c.Main.Stdout, "enabled %q: it can sign in again\n", acct.Name)
		}
	case "passwd":
		pw, err := c.password(acct.Name)
		if err != nil {
			return err
		}
		if _, err := accounts.ResetPassword(ctx, cliAdmin, acct.ID, pw); err != nil {
			return addError(err, "")
		}
		fmt.Fprintf(c.Main.Stdout, "set the password of %q; its sessions ended\n", acct.Name)
	}
	return nil
}

// accountFlags name, for each field of a quan.NewAccount, where it comes
// from on the command line.
var accountFlags = map[string]string{"name": "NAME", "role": "--role", "shopNo": "--shop", "password": "the password"}

// addError turns the EINVALID of an account's fields, all but skip, into
// a usage error naming their flags; another error is returned as it is
// ("user: " before it). nil stays nil.
func addError(err error, skip string) error {
	if err == nil {
		return nil
	}
	if quan.ErrorCode(err) != quan.EINVALID {
		return fmt.Errorf("user: %w", err)
	}
	var msgs []string
	for _, fe := range quan.ErrorFields(err) {
		if fe.Field == skip {
			continue
		}
		msgs = append(msgs, accountFlags[fe.Field]+": "+fe.Message)
	}
	if len(msgs) == 0 {
		return nil
	}
	return cli.Usagef("user: %s", strings.Join(msgs, "; "))
}

// list prints every account of f, a page at a time.
func (c *UserCommand) list(ctx context.Context, accounts *accounts.Service, f quan.AccountFilter) error {
	w := tabwriter.NewWriter(c.Main.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tNAME\tROLE\tSHOP\tSTATUS\tCREATED\tBY")
	f.Limit = quan.MaxPageSize
	total := 0
	for {
		as, n, err := accounts.List(ctx, cliAdmin, f)
		if err != nil {
			return fmt.Errorf("user list: %w", err)
		}
		total = n
		for _, a := range as {
			shop, status := "-", "active"
			if a.ShopNo != 0 {
				shop = fmt.Sprint(a.ShopNo)
			}
			if a.Disabled {
				status = "disabled"
			}
			fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", a.ID, a.Name, a.Role, shop, status, a.CreatedAt.Format(time.RFC3339), a.CreatedBy)
		}
		f.Offset += len(as)
		if len(as) == 0 || f.Offset >= n {
			break
		}
	}
	w.Flush()
	fmt.Fprintf(c.Main.Stdout, "%d accounts\n", total)
	return nil
}

// password reads the password of account name: on a terminal, asked for
// twice without echo; otherwise the first line of stdin.
func (c *UserCommand) password(name string) (string, error) {
	if f, ok := c.Main.Stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		ask := func(prompt string) (string, error) {
			fmt.Fprint(c.Main.Stderr, prompt)
			b, err := term.ReadPassword(int(f.Fd()))
			fmt.Fprintln(c.Main.Stderr)
			if err != nil {
				return "", fmt.Errorf("read the password: %w", err)
			}
			return string(b), nil
		}
		pw, err := ask(fmt.Sprintf("Password for %s: ", name))
		if err != nil {
			return "", err
		}
		again, err := ask("Again: ")
		if err != nil {
			return "", err
		}
		if pw != again {
			return "", errors.New("user: the two passwords differ; nothing changed")
		}
		return pw, nil
	}
	if c.Main.Stdin == nil {
		return "", errors.New("user: no password: stdin is not open")
	}
	line, err := bufio.NewReader(c.Main.Stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("user: read the password from stdin: %w", err)
	}
	pw := strings.TrimRight(line, "\r\n")
	if pw == "" {
		return "", errors.New("user: no password: give it on the first line of stdin, or run on a terminal to be asked")
	}
	return pw, nil
}
