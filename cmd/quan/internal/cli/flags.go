// Package cli holds the conventions every quan command shares: flags that
// fall back to QUAN_* environment variables, usage errors and their exit
// status, the progress display and the summary of a task, in text or
// JSON.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// ErrHelp is returned when the user asked for help (-h): the help was
// printed and the command exits 0.
var ErrHelp = errors.New("help requested")

// UsageError is a command line that cannot run as given: the command
// exits 2.
type UsageError struct {
	Msg     string
	Printed bool // the message, or the usage, is on stderr already
}

func (e *UsageError) Error() string { return e.Msg }

// Usagef returns a *UsageError with a formatted message.
func Usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// ExitCode is the exit status for err: 0 for none or for help, 2 for a
// usage error, 1 for any other failure.
func ExitCode(err error) int {
	var u *UsageError
	switch {
	case err == nil, errors.Is(err, ErrHelp):
		return 0
	case errors.As(err, &u):
		return 2
	}
	return 1
}

// EnvName is the environment variable that sets a flag: --jwt-secret is
// QUAN_JWT_SECRET.
func EnvName(flagName string) string {
	return "QUAN_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// Parse parses args into fs, then sets every flag not given on the command
// line from its QUAN_* variable (getenv may be nil). Flags and positional
// arguments may come in any order ("quan distribute users.xlsx
// --template 1"); Parse returns the positional ones, one for each of
// argNames (as "FILE"), no more, no fewer, except that a name in brackets
// ("[FILE]") may be left out. Every flag's help names its variable. A
// malformed command line is a *UsageError; -h is ErrHelp.
func Parse(fs *flag.FlagSet, args []string, getenv func(string) string, stderr io.Writer, argNames ...string) ([]string, error) {
	fs.SetOutput(stderr)
	fs.VisitAll(func(f *flag.Flag) {
		if !strings.Contains(f.Usage, "$QUAN_") {
			f.Usage += " ($" + EnvName(f.Name) + ")"
		}
	})
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, ErrHelp
			}
			// The flag package printed the error and the usage.
			return nil, &UsageError{Msg: fmt.Sprintf("%s: %v", fs.Name(), err), Printed: true}
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		if args[0] == "--" {
			pos = append(pos, args[1:]...)
			break
		}
		pos, args = append(pos, args[0]), args[1:]
	}
	optional := 0
	for _, n := range argNames {
		if strings.HasPrefix(n, "[") {
			optional++
		}
	}
	switch {
	case len(pos) <= len(argNames) && len(pos) >= len(argNames)-optional:
	case len(argNames) == 0:
		return nil, Usagef("%s: unexpected arguments %q", fs.Name(), pos)
	case len(argNames) == 1:
		return nil, Usagef("%s: want one %s, got %d arguments %q", fs.Name(), argNames[0], len(pos), pos)
	default:
		return nil, Usagef("%s: want %s, got %d arguments %q", fs.Name(), strings.Join(argNames, " "), len(pos), pos)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || getenv == nil || err != nil {
			return
		}
		if v := getenv(EnvName(f.Name)); v != "" {
			if e := f.Value.Set(v); e != nil {
				err = Usagef("%s=%q: %v", EnvName(f.Name), v, e)
			}
		}
	})
	return pos, err
}

// IsSet reports whether the flag name was given on the command line.
func IsSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// NewLogger returns a slog logger writing to w at level ("debug", "info",
// "warn", "error") in format ("text" or "json").
func NewLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, Usagef("--log-level %q: use debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, Usagef("--log-format %q: use text or json", format)
}
