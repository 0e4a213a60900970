// Package cli is the small subcommand dispatcher shared by ditto's three binaries, and the
// conventions they keep on the command line.
//
// Each binary's main.go names its subcommands in one list (a Program); a subcommand is a
// function given a flag set named after it ("analyzer metrics") to register its flags on and
// parse with Parse. The dispatcher owns what every binary prints the same way:
//
//   - help: "<binary> --help" lists the subcommands, "<binary> <command> --help" (or
//     "<binary> help <command>") shows the command's usage line, its flags with their
//     defaults and environment variables, and the exit statuses;
//   - "--version" (ReadBuildInfo's module version and VCS stamp, or the version the build set
//     with -ldflags "-X github.com/dittolab/ditto/internal/cli.version=…");
//   - usage errors: "<binary> <command>: what is wrong", then the command's own usage line;
//   - exit statuses: 0 done, 1 failed, 2 usage error (an ExitError picks another).
//
// Flags may come before or after positional arguments ("--" ends them). A flag defined with
// String, Int, Duration, URL, Secret or SecretList takes its value from an environment
// variable when the command line does not give it; help names the variable, and never shows a
// secret: a Secret's help says whether its variable is set, a URL's hides its password.
//
// With DITTO_CPUPROFILE=FILE in its environment, any command writes a CPU profile of its run
// to FILE (CPUProfileEnv); with DITTO_HEAPPROFILE=FILE, heap profiles (HeapProfileEnv).
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
)

// Program is one binary: its name, what it is for, and its subcommands in the order its help
// lists them.
type Program struct {
	Name     string
	Summary  string
	Commands []Command
}

// Command is one subcommand.
type Command struct {
	// Name is one word, or two for a command of a group ("study submit": "producer study"
	// alone lists the group).
	Name string
	// Usage is the synopsis after the name, e.g. `--study S [flags]` or `[flags] SPEC`;
	// empty means "[flags]".
	Usage   string
	Summary string
	// Run registers its flags on fs (named "<binary> <command>"), parses args with Parse and
	// runs. It returns nil for success, an error wrapping ErrUsage for a bad command line
	// (exit status 2), an ExitError for a chosen status, or any other error (exit status 1).
	Run func(ctx context.Context, fs *flag.FlagSet, args []string) error
}

// Main runs the program on os.Args with a context cancelled on SIGINT or SIGTERM, and exits
// with the status Run returns.
func (p Program) Main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := p.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Run dispatches args (the words after the binary's name) and returns the exit status. Help
// and the version go to stdout when asked for, usage errors and failures to stderr; what a
// command prints itself goes where the command writes it.
func (p Program) Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		p.writeHelp(stderr)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help":
		p.writeHelp(stdout)
		return 0
	case "-version", "--version", "version":
		fmt.Fprintf(stdout, "%s %s\n", p.Name, Version())
		return 0
	case "help":
		return p.help(args[1:], stdout, stderr)
	}
	c, rest, group := p.find(args)
	switch {
	case c == nil && group == "":
		fmt.Fprintf(stderr, "%s: unknown command %q\n", p.Name, args[0])
		p.writeHelp(stderr)
		return 2
	case c == nil && len(rest) == 0:
		fmt.Fprintf(stderr, "%s %s: name one of its commands\n", p.Name, group)
		p.writeGroupHelp(stderr, group)
		return 2
	case c == nil && isHelp(rest[0]):
		p.writeGroupHelp(stdout, group)
		return 0
	case c == nil:
		fmt.Fprintf(stderr, "%s: unknown command %q\n", p.Name, group+" "+rest[0])
		p.writeGroupHelp(stderr, group)
		return 2
	}
	// The heap profiles first, so that the last one's collection is not in the CPU profile
	// (deferred functions run in reverse).
	if path := os.Getenv(HeapProfileEnv); path != "" {
		every, err := heapProfileEvery()
		if err != nil {
			fmt.Fprintf(stderr, "%s %s: %v\n", p.Name, c.Name, err)
			return 1
		}
		stopHeap, err := startHeapProfiles(path, every, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "%s %s: %v\n", p.Name, c.Name, err)
			return 1
		}
		defer func() {
			if err := stopHeap(); err != nil {
				fmt.Fprintf(stderr, "%s %s: %v\n", p.Name, c.Name, err)
			}
		}()
	}
	if path := os.Getenv(CPUProfileEnv); path != "" {
		stopProfile, err := startCPUProfile(path)
		if err != nil {
			fmt.Fprintf(stderr, "%s %s: %v\n", p.Name, c.Name, err)
			return 1
		}
		defer func() {
			if err := stopProfile(); err != nil {
				fmt.Fprintf(stderr, "%s %s: %s: %v\n", p.Name, c.Name, CPUProfileEnv, err)
			}
		}()
	}
	fs := p.flagSet(c)
	err := c.Run(ctx, fs, rest)
	var ee *ExitError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		p.writeCommandHelp(stdout, c, fs)
		return 0
	case errors.As(err, &ee):
		fmt.Fprintf(stderr, "%s %s: %v\n", p.Name, c.Name, err)
		return ee.Code
	case errors.Is(err, ErrUsage):
		fmt.Fprintf(stderr, "%s %s: %s\n", p.Name, c.Name, strings.TrimPrefix(err.Error(), ErrUsage.Error()+": "))
		fmt.Fprintf(stderr, "usage: %s\nRun '%s %s --help' for its flags.\n", p.usageLine(c), p.Name, c.Name)
		return 2
	}
	fmt.Fprintf(stderr, "%s %s: %v\n", p.Name, c.Name, err)
	return 1
}

// help answers "help [command]".
func (p Program) help(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		p.writeHelp(stdout)
		return 0
	}
	c, rest, group := p.find(args)
	switch {
	case c != nil && len(rest) == 0:
		// The command's flags are known once it has registered them: run it as far as
		// its help.
		fs := p.flagSet(c)
		if err := c.Run(context.Background(), fs, []string{"--help"}); errors.Is(err, flag.ErrHelp) {
			p.writeCommandHelp(stdout, c, fs)
			return 0
		}
	case c == nil && group != "" && len(rest) == 0:
		p.writeGroupHelp(stdout, group)
		return 0
	}
	fmt.Fprintf(stderr, "%s help: unknown command %q\n", p.Name, strings.Join(args, " "))
	p.writeHelp(stderr)
	return 2
}

// find returns the command args name and the arguments after its name. When none matches but
// args[0] names a group, group is that word.
func (p Program) find(args []string) (c *Command, rest []string, group string) {
	for i := range p.Commands {
		words := strings.Fields(p.Commands[i].Name)
		if len(args) >= len(words) && slices.Equal(args[:len(words)], words) {
			return &p.Commands[i], args[len(words):], ""
		}
		if len(words) > 1 && words[0] == args[0] {
			group = words[0]
		}
	}
	return nil, args[1:], group
}

func (p Program) flagSet(c *Command) *flag.FlagSet {
	fs := flag.NewFlagSet(p.Name+" "+c.Name, flag.ContinueOnError)
	// The dispatcher prints errors and help itself (help without secrets): the flag package
	// prints nothing.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

func (p Program) usageLine(c *Command) string {
	u := c.Usage
	if u == "" {
		u = "[flags]"
	}
	return p.Name + " " + c.Name + " " + u
}

func isHelp(s string) bool { return s == "-h" || s == "-help" || s == "--help" || s == "help" }
