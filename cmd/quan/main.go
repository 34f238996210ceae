// Command quan is the coupon platform's one binary: the API server and the
// operator's tools, chosen by subcommand.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	m := &Main{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}
	if err := m.Run(ctx, os.Args[1:]); err != nil {
		if err != errUsage {
			fmt.Fprintln(os.Stderr, "quan:", err)
		}
		os.Exit(2)
	}
}

// Main runs one subcommand. Tests drive it in-process with their own
// streams and environment.
type Main struct {
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
  quan bench distribute [flags]    measure a distribution end to end
  quan bench read [flags]          measure the spreadsheet reader against excelize
  quan bench claim [flags]         load the claim API over HTTP and verify no claim is lost
  quan bench wallet lock|sweep     lock+redeem orders against the raw loop; the expiry sweep

Run 'quan COMMAND -h' for a command's flags. Every flag can also be set
with an environment variable: --data is QUAN_DATA, --jwt-secret is
QUAN_JWT_SECRET, and so on.
`

// Run dispatches args[0] to its subcommand. It returns when the command
// finishes or, for serve, when ctx ends and the server has drained.
func (m *Main) Run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(m.Stderr, usage)
		return errUsage
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
	case "gen-users":
		return (&GenUsersCommand{Main: m}).Run(ctx, args[1:])
	case "distribute":
		return (&DistributeCommand{Main: m}).Run(ctx, args[1:])
	case "demo":
		return (&DemoCommand{Main: m}).Run(ctx, args[1:])
	case "bench":
		return (&BenchCommand{Main: m}).Run(ctx, args[1:])
	case "help", "-h", "--help":
		fmt.Fprint(m.Stdout, usage)
		return nil
	}
	fmt.Fprintf(m.Stderr, "quan: unknown command %q\n\n%s", args[0], usage)
	return errUsage
}
