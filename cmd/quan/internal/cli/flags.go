// Package cli holds the conventions every quan command shares: flags that
// fall back to QUAN_* environment variables, usage errors and their exit
// status, the progress display and the summary of a task, in text or
// JSON.
package cli

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
)

// ErrHelp is returned when the user asked for help (-h): the help was
// printed and the command exits 0.
var ErrHelp = errors.New("help requested")

// UsageError is a command line that cannot run as given: the command
// exits 2, printing the message and where to find help (Hint).
type UsageError struct {
	Msg string
	// Cmd is the command whose help (-h) explains what went wrong, as
	// "distribute" or "bench claim"; "" leaves it to the caller, who knows
	// the command line.
	Cmd     string
	Printed bool // the message, or the usage, is on stderr already
}

func (e *UsageError) Error() string { return e.Msg }

// Hint is the one line a usage error ends with: the command that shows
// cmd's help ("" for quan's own).
func Hint(cmd string) string {
	if cmd == "" {
		return "Run 'quan -h' for the commands."
	}
	return fmt.Sprintf("Run 'quan %s -h' for its usage.", cmd)
}

// IsHelp reports whether arg asks for help, as -h, -help and --help do.
func IsHelp(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help"
}

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
// malformed command line is a *UsageError, printed by nobody yet (the
// flag package's usage is not printed after it); -h prints fs.Usage (by
// default a "Usage:" line and the flags) to help and returns ErrHelp.
func Parse(fs *flag.FlagSet, args []string, getenv func(string) string, help io.Writer, argNames ...string) ([]string, error) {
	usage := fs.Usage
	// The flag package prints an error and the usage to the output: the
	// usage is for -h alone, and the caller prints the error.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.VisitAll(func(f *flag.Flag) {
		if !strings.Contains(f.Usage, "$QUAN_") {
			if secretFlags[f.Name] {
				f.Usage += " ($" + EnvName(f.Name) + ", or a file holding it: $" + EnvName(f.Name) + "_FILE)"
			} else {
				f.Usage += " ($" + EnvName(f.Name) + ")"
			}
		}
	})
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				printUsage(fs, usage, help, argNames)
				return nil, ErrHelp
			}
			return nil, &UsageError{Msg: fmt.Sprintf("%s: %v", fs.Name(), err), Cmd: fs.Name()}
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
		return nil, &UsageError{Msg: fmt.Sprintf("%s: unexpected arguments %q", fs.Name(), pos), Cmd: fs.Name()}
	case len(argNames) == 1:
		return nil, &UsageError{Msg: fmt.Sprintf("%s: want one %s, got %d arguments %q", fs.Name(), argNames[0], len(pos), pos), Cmd: fs.Name()}
	default:
		return nil, &UsageError{Msg: fmt.Sprintf("%s: want %s, got %d arguments %q", fs.Name(), strings.Join(argNames, " "), len(pos), pos), Cmd: fs.Name()}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || getenv == nil || err != nil {
			return
		}
		name := EnvName(f.Name)
		v, from, e := envValue(getenv, name)
		if e != nil {
			err = e
			return
		}
		if v != "" {
			if e := f.Value.Set(v); e != nil {
				if from != name { // the value may be a secret: name the file, not its contents
					err = Usagef("%s: %v", from, e)
				} else {
					err = Usagef("%s=%q: %v", name, v, e)
				}
			}
		}
	})
	return pos, err
}

// printUsage prints a flag set's usage to w: the command's own, or in
// place of the flag package's default "Usage of NAME:" a line of the
// command and its arguments.
func printUsage(fs *flag.FlagSet, usage func(), w io.Writer, argNames []string) {
	var b bytes.Buffer
	fs.SetOutput(&b)
	usage()
	fs.SetOutput(io.Discard)
	text := b.String()
	if rest, ok := strings.CutPrefix(text, "Usage of "+fs.Name()+":\n"); ok {
		line := "Usage: quan " + fs.Name()
		for _, n := range argNames {
			line += " " + n
		}
		text = line + " [flags]\n\nFlags:\n" + rest
	}
	io.WriteString(w, text)
}

// secretFlags are the flags whose values may carry a secret (a password
// in a URL): their help names their _FILE variable.
var secretFlags = map[string]bool{"jwt-secret": true, "store": true, "cache": true, "bus": true}

// envValue returns the value of the variable name, or of the file that
// name_FILE names (its contents, trailing newlines trimmed), so that
// secrets can come from files (a container's mounted secrets) rather than
// the environment, which child processes and crash reports see. Any
// QUAN_ variable may be given either way; both at once is an error, and
// so is a file that cannot be read or is empty. from says which was used.
func envValue(getenv func(string) string, name string) (v, from string, err error) {
	v = getenv(name)
	path := getenv(name + "_FILE")
	if path == "" {
		return v, name, nil
	}
	if v != "" {
		return "", "", Usagef("both %s and %s_FILE are set: use one", name, name)
	}
	from = fmt.Sprintf("%s_FILE=%s", name, path)
	b, err := os.ReadFile(path)
	if err != nil {
		return "", "", fmt.Errorf("%s: %w", from, err)
	}
	v = strings.TrimRight(string(b), "\r\n")
	if v == "" {
		return "", "", Usagef("%s: the file is empty", from)
	}
	return v, from, nil
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
