package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// The standard flag package reads no environment and prints a flag's default, secret or not,
// in every usage message; ff (github.com/peterbourgon/ff) maps every flag to a variable by its
// name (DITTO_TOKEN, where ours are DITTO_ANALYZER_TOKEN and DITTO_INGEST_TOKENS) and prints
// defaults too. These few definers keep the standard flag package and add what ditto needs:
// one named variable per flag, shown in help, secrets never shown.

// show says how help and errors show a flag's value.
type show int

const (
	showPlain  show = iota
	showURL         // URLs: shown without their user information and query (see RedactURLs)
	showSecret      // never: help says whether its variable is set
)

// envValue is a flag whose value may come from an environment variable (applied by Parse).
type envValue struct {
	set  func(string) error
	get  func() string
	typ  string // the value's name in help: string, int, duration
	env  string
	show show
	list bool  // the variable holds several values separated by white space (SecretList)
	err  error // a secret's failed Set, reported by Parse without the value
}

func (v *envValue) String() string {
	if v == nil || v.get == nil || v.show == showSecret {
		return ""
	}
	if v.show == showURL {
		return RedactURLs(v.get())
	}
	return v.get()
}

func (v *envValue) Set(s string) error {
	err := v.set(s)
	if err != nil && v.show == showSecret {
		// The flag package would quote the value in its error: Parse reports it instead.
		v.err = hideValue(err, s)
		return nil
	}
	return err
}

// String defines a string flag whose value, when the command line does not give it, is env's
// if set and not empty, else def.
func String(fs *flag.FlagSet, p *string, name, env, def, usage string) {
	stringFlag(fs, p, name, env, def, usage, showPlain)
}

// URL is String for a flag holding one or more URLs (comma-separated) that may carry
// credentials: help shows them without their user information and query.
func URL(fs *flag.FlagSet, p *string, name, env, def, usage string) {
	stringFlag(fs, p, name, env, def, usage, showURL)
}

// Secret is String for a secret (a password, a token, a URL that is a credential itself): help
// shows whether env is set, never a value, and an invalid value is reported without it.
func Secret(fs *flag.FlagSet, p *string, name, env, usage string) {
	stringFlag(fs, p, name, env, "", usage, showSecret)
}

func stringFlag(fs *flag.FlagSet, p *string, name, env, def, usage string, sh show) {
	*p = def
	fs.Var(&envValue{
		set:  func(s string) error { *p = s; return nil },
		get:  func() string { return *p },
		typ:  "string",
		env:  env,
		show: sh,
	}, name, usage)
}

// SecretList defines a repeatable secret flag: each value given is passed to fn. When the
// command line gives none, env holds the values, separated by white space.
func SecretList(fs *flag.FlagSet, name, env, usage string, fn func(string) error) {
	fs.Var(&envValue{set: fn, typ: "string", env: env, show: showSecret, list: true}, name, usage)
}

// Int is String for an int (decimal, or 0x… hexadecimal).
func Int(fs *flag.FlagSet, p *int, name, env string, def int, usage string) {
	*p = def
	fs.Var(&envValue{
		set: func(s string) error {
			n, err := strconv.ParseInt(s, 0, strconv.IntSize)
			if err != nil {
				return errors.New("not an integer")
			}
			*p = int(n)
			return nil
		},
		get: func() string { return strconv.Itoa(*p) },
		typ: "int",
		env: env,
	}, name, usage)
}

// Duration is String for a time.Duration ("90s", "2m").
func Duration(fs *flag.FlagSet, p *time.Duration, name, env string, def time.Duration, usage string) {
	*p = def
	fs.Var(&envValue{
		set: func(s string) error {
			d, err := time.ParseDuration(s)
			if err != nil {
				return errors.New("not a duration (e.g. 90s, 2m)")
			}
			*p = d
			return nil
		},
		get: func() string { return p.String() },
		typ: "duration",
		env: env,
	}, name, usage)
}

// Parse parses args into fs. Flags may come before, between and after positional arguments;
// "--" ends the flags. A flag defined by this package and not given takes its environment
// variable's value when that is set and not empty. The positional arguments are left in
// fs.Args(). Errors wrap ErrUsage, except flag.ErrHelp for -h or --help.
func Parse(fs *flag.FlagSet, args []string) error {
	fs.SetOutput(io.Discard)
	var positional []string
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return err
			}
			return fmt.Errorf("%w: %v", ErrUsage, err)
		}
		if fs.NArg() == 0 {
			break
		}
		if used := len(rest) - fs.NArg(); used > 0 && rest[used-1] == "--" {
			positional = append(positional, fs.Args()...)
			break
		}
		positional = append(positional, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if err := secretError(fs, ""); err != nil {
		return err
	}
	if err := applyEnv(fs); err != nil {
		return err
	}
	// Parsing "--" alone sets no flag and leaves what follows as the arguments.
	return fs.Parse(append([]string{"--"}, positional...))
}

// applyEnv sets each flag of this package that the command line did not give from its
// environment variable.
func applyEnv(fs *flag.FlagSet) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		v, ok := f.Value.(*envValue)
		if !ok || given[f.Name] || err != nil {
			return
		}
		raw := os.Getenv(v.env)
		if raw == "" {
			return
		}
		vals := []string{raw}
		if v.list {
			vals = strings.Fields(raw)
		}
		for _, s := range vals {
			if serr := fs.Set(f.Name, s); serr != nil {
				shown := raw
				if v.show == showURL {
					shown = RedactURLs(raw)
				}
				err = fmt.Errorf("%w: environment variable %s=%q (for --%s): %v", ErrUsage, v.env, shown, f.Name, serr)
				return
			}
		}
		err = secretError(fs, v.env)
	})
	return err
}

// secretError reports a secret flag whose value was refused, without the value; env names the
// variable it came from ("" for the command line).
func secretError(fs *flag.FlagSet, env string) error {
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		v, ok := f.Value.(*envValue)
		if !ok || v.err == nil || err != nil {
			return
		}
		from := "--" + f.Name
		if env != "" {
			from = "environment variable " + env + " (for --" + f.Name + ")"
		}
		err = fmt.Errorf("%w: %s: %v (the value is not shown)", ErrUsage, from, v.err)
		v.err = nil
	})
	return err
}

// hideValue returns err's message with value cut out. It does not wrap err, whose message
// holds the value.
func hideValue(err error, value string) error {
	msg := err.Error()
	if value != "" {
		msg = strings.ReplaceAll(msg, value, "…")
	}
	return errors.New(msg)
}
