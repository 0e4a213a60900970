// Package cli is the small subcommand dispatcher shared by ditto's three binaries. Each
// subcommand lives in its own file of its cmd/ package and registers itself in init, so that
// the mains stay thin and subcommands can be added without editing a central switch.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// Command is one subcommand.
type Command struct {
	Name    string
	Summary string
	// Run parses args (the words after the subcommand's name) and runs. It returns an error
	// for failure; wrap ErrUsage for bad arguments (exit status 2).
	Run func(ctx context.Context, args []string) error
}

// ErrUsage marks an error in the command line (exit status 2).
var ErrUsage = errors.New("usage")

// ExitError carries a specific exit status (e.g. 1 for "some lines were rejected").
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// Set is the subcommands of one binary.
type Set struct {
	Binary   string
	commands map[string]Command
}

// NewSet returns an empty set for the named binary.
func NewSet(binary string) *Set { return &Set{Binary: binary, commands: map[string]Command{}} }

// Register adds a subcommand; registering a name twice panics (a programming error).
func (s *Set) Register(c Command) {
	if _, dup := s.commands[c.Name]; dup {
		panic("command: duplicate subcommand " + c.Name)
	}
	s.commands[c.Name] = c
}

// Main runs the subcommand named by os.Args[1] with a context cancelled on SIGINT or SIGTERM,
// and exits with 0, 1 (failure), 2 (usage) or the ExitError's code.
func (s *Set) Main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := s.run(ctx, os.Args[1:], os.Stderr)
	stop()
	os.Exit(code)
}

func (s *Set) run(ctx context.Context, args []string, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		s.usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := s.commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "%s: unknown command %q\n", s.Binary, args[0])
		s.usage(stderr)
		return 2
	}
	err := c.Run(ctx, args[1:])
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintf(stderr, "%s %s: %v\n", s.Binary, c.Name, err)
	var ee *ExitError
	switch {
	case errors.As(err, &ee):
		return ee.Code
	case errors.Is(err, ErrUsage):
		return 2
	}
	return 1
}

func (s *Set) usage(w io.Writer) {
	fmt.Fprintf(w, "usage: %s <command> [flags]\n\ncommands:\n", s.Binary)
	names := make([]string, 0, len(s.commands))
	for n := range s.commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-14s %s\n", n, s.commands[n].Summary)
	}
	fmt.Fprintf(w, "\nRun '%s <command> -h' for a command's flags.\n", s.Binary)
}

// Parse parses args into fs, turning flag errors into ErrUsage.
func Parse(fs *flag.FlagSet, args []string) error {
	fs.SetOutput(os.Stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	return nil
}
