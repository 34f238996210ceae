// Command quan is the coupon platform's one binary: the API server and the
// operator's tools, chosen by subcommand. Package app wires it; this
// package parses command lines and prints.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"syscall"
	"time"

	"github.com/quanhq/quan/cmd/quan/internal/bench"
	"github.com/quanhq/quan/cmd/quan/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	m := &Main{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}
	err := m.Run(ctx, os.Args[1:])
	stop()
	os.Exit(m.Exit(os.Args[1:], err))
}

// Main runs one subcommand. Tests drive it in-process with their own
// streams and environment.
type Main struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Getenv reads QUAN_* settings; only Main reads the environment.
	Getenv func(string) string
	// Now is the clock of every use case; nil means time.Now. Tests move
	// it to reach scheduled times without sleeping.
	Now func() time.Time
}

const usage = `quan — coupon platform

Usage:
  quan demo       [flags]          distribute a coupon to 1,000,000 generated users, with progress
  quan serve      [flags]          run the HTTP API and the distribution runner
  quan worker     [flags]          run only the distribution runner (processes share tasks via the store)
  quan distribute [flags] FILE     distribute a template to the users in an .xlsx or .csv file
  quan gen-users  [flags]          write a file of fake target users
  quan token      [flags]          mint a bearer token for development
  quan user       ACTION [flags]   manage the operator console's accounts: add, list, disable, enable, passwd
  quan apikey     ACTION [flags]   manage the service keys of the order system, POS, CRM: create, list, revoke
  quan migrate    up|status        apply the store's schema migrations, or list them (then serve --migrate=false)
  quan sms-sink   [flags]          a local SMS gateway that prints the messages quan sends (for trying notify=sms)
  quan version                     print the version and the source revision
  quan bench distribute [flags]    measure a distribution end to end
  quan bench read [flags]          measure the spreadsheet reader against excelize
  quan bench claim [flags]         load the claim API over HTTP and verify no claim is lost
  quan bench wallet lock|sweep|remind  lock+redeem orders against the raw loop; the expiry sweep; expiry reminders
  quan bench stats [flags]         p99 of GET /templates/{id}/stats with 10 million coupons
  quan bench notify [flags]        SMS/s and emails/s of the dispatcher to a local gateway and SMTP server
  quan bench conns [flags]         what 1,000 slow or idle connections cost quan serve, and which it keeps

Run 'quan COMMAND -h' (or 'quan help COMMAND') for a command's flags. Every flag can also be set
with an environment variable: --data is QUAN_DATA, --jwt-secret is
QUAN_JWT_SECRET, and so on; QUAN_X_FILE names a file holding the value
of QUAN_X instead (secrets: QUAN_JWT_SECRET_FILE, QUAN_STORE_FILE,
QUAN_CACHE_FILE, QUAN_BUS_FILE). Exit status: 0 done (or help), 1 failed,
2 a command line that cannot run.
`

// Run dispatches args[0] to its subcommand. It returns when the command
// finishes or, for serve and worker, when ctx ends and the process has
// drained. A *cli.UsageError means the command line was wrong.
func (m *Main) Run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(m.Stderr, usage)
		return &cli.UsageError{Printed: true}
	}
	switch args[0] {
	case "serve", "worker":
		cmd := &ServeCommand{Main: m, Worker: args[0] == "worker"}
		if err := cmd.ParseFlags(args[1:]); err != nil {
			return err
		}
		if err := cmd.Open(ctx); err != nil {
			cmd.Close()
			return err
		}
		<-ctx.Done()
		return cmd.Close()
	case "token":
		return (&TokenCommand{Main: m}).Run(ctx, args[1:])
	case "migrate":
		return (&MigrateCommand{Main: m}).Run(ctx, args[1:])
	case "user":
		return (&UserCommand{Main: m}).Run(ctx, args[1:])
	case "apikey":
		return (&APIKeyCommand{Main: m}).Run(ctx, args[1:])
	case "gen-users":
		return (&GenUsersCommand{Main: m}).Run(ctx, args[1:])
	case "distribute":
		return (&DistributeCommand{Main: m}).Run(ctx, args[1:])
	case "demo":
		return (&DemoCommand{Main: m}).Run(ctx, args[1:])
	case "sms-sink":
		return (&SMSSinkCommand{Main: m}).Run(ctx, args[1:])
	case "bench":
		b := &bench.Command{Stdout: m.Stdout, Stderr: m.Stderr, Getenv: m.Getenv, Now: m.Now}
		return b.Run(ctx, args[1:])
	case "version", "--version", "-version":
		switch {
		case len(args) > 1 && cli.IsHelp(args[1]):
			fmt.Fprint(m.Stdout, "Usage: quan version\n\nPrints quan's version, the source revision it was built from and the Go release.\n")
			return cli.ErrHelp
		case len(args) > 1:
			return &cli.UsageError{Msg: fmt.Sprintf("version: unexpected arguments %q", args[1:]), Cmd: "version"}
		}
		fmt.Fprintln(m.Stdout, version())
		return nil
	case "help", "-h", "--help", "-help":
		if len(args) > 1 && args[0] == "help" && !cli.IsHelp(args[1]) {
			// quan help distribute is quan distribute -h.
			return m.Run(ctx, append(slices.Clone(args[1:]), "-h"))
		}
		fmt.Fprint(m.Stdout, usage)
		return nil
	}
	return &cli.UsageError{Msg: fmt.Sprintf("unknown command %q", args[0])}
}

// commands are quan's subcommands, as Run knows them.
var commands = []string{"serve", "worker", "token", "migrate", "user", "apikey", "gen-users", "distribute", "demo", "sms-sink", "bench", "version", "help"}

// Exit prints err, how the command line args ended, on stderr and returns
// the exit status (cli.ExitCode). A usage error gets one more line: how
// to see the help of the command that refused it, never the help itself.
func (m *Main) Exit(args []string, err error) int {
	var u *cli.UsageError
	switch {
	case err == nil, errors.Is(err, cli.ErrHelp):
	case errors.As(err, &u):
		if u.Printed {
			break
		}
		fmt.Fprintln(m.Stderr, "quan:", err)
		cmd := u.Cmd
		if cmd == "" && len(args) > 0 && args[0] != "help" && slices.Contains(commands, args[0]) {
			cmd = args[0]
		}
		fmt.Fprintln(m.Stderr, cli.Hint(cmd))
	default:
		fmt.Fprintln(m.Stderr, "quan:", err)
	}
	return cli.ExitCode(err)
}

// parse parses a command's flags, falling back to QUAN_* variables, and
// returns its positional arguments, one for each of argNames.
func (m *Main) parse(fs *flag.FlagSet, args []string, argNames ...string) ([]string, error) {
	return cli.Parse(fs, args, m.Getenv, m.Stdout, argNames...)
}

// version is the module's version and the VCS revision it was built from,
// as the Go toolchain recorded them.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "quan (no build information)"
	}
	v := "quan " + info.Main.Version
	var rev, when, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = " (modified)"
			}
		}
	}
	if rev != "" {
		v += ", revision " + rev + dirty
	} else {
		v += ", revision unknown (built with -buildvcs=false or outside a checkout)"
	}
	if when != "" {
		v += ", " + when
	}
	return v + ", " + info.GoVersion
}
