package cli

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// exitStatuses ends every help text.
const exitStatuses = "exit status: 0 done, 1 failed, 2 usage error (the command line is wrong)\n"

func (p Program) writeHelp(w io.Writer) {
	fmt.Fprintf(w, "%s: %s\n\nusage: %s <command> [flags] [arguments]\n\ncommands:\n", p.Name, p.Summary, p.Name)
	p.writeCommands(w, "")
	fmt.Fprintf(w, "\nRun '%s <command> --help' for a command's flags and environment variables,\n'%s --version' for the version.\n\n%s",
		p.Name, p.Name, exitStatuses)
}

func (p Program) writeGroupHelp(w io.Writer, group string) {
	fmt.Fprintf(w, "usage: %s %s <command> [flags] [arguments]\n\ncommands:\n", p.Name, group)
	p.writeCommands(w, group+" ")
	fmt.Fprintf(w, "\nRun '%s %s <command> --help' for a command's flags.\n\n%s", p.Name, group, exitStatuses)
}

// writeCommands lists the commands whose name starts with prefix.
func (p Program) writeCommands(w io.Writer, prefix string) {
	width := 0
	for _, c := range p.Commands {
		width = max(width, len(c.Name))
	}
	for _, c := range p.Commands {
		if strings.HasPrefix(c.Name, prefix) {
			fmt.Fprintf(w, "  %-*s  %s\n", width, c.Name, c.Summary)
		}
	}
}

func (p Program) writeCommandHelp(w io.Writer, c *Command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: %s\n\n%s\n", p.usageLine(c), c.Summary)
	n, env := 0, false
	fs.VisitAll(func(f *flag.Flag) {
		n++
		_, isEnv := f.Value.(*envValue)
		env = env || isEnv
	})
	if n > 0 {
		fmt.Fprintf(w, "\nflags (before or after the arguments; -- ends them):\n")
		fs.VisitAll(func(f *flag.Flag) { writeFlag(w, f) })
	}
	if env {
		fmt.Fprintf(w, "\nA flag marked [env NAME] takes the value of the environment variable NAME when the\n"+
			"command line does not give it. Secrets are never shown; give them by environment\n"+
			"rather than by flag, which any user can read in the process list.\n")
	}
	fmt.Fprintf(w, "\n%s", exitStatuses)
}

// writeFlag writes one flag as the flag package does (name and type, then the usage indented
// on the next line), with its default unless it is a zero value or a secret, and its
// environment variable.
func writeFlag(w io.Writer, f *flag.Flag) {
	typ, usage := flag.UnquoteUsage(f)
	v, isEnv := f.Value.(*envValue)
	if isEnv {
		typ = v.typ
	}
	line := "  --" + f.Name
	if typ != "" {
		line += " " + typ
	}
	fmt.Fprintf(w, "%s\n    \t%s", line, strings.ReplaceAll(usage, "\n", "\n    \t"))
	if def := f.DefValue; !isZero(def) && (!isEnv || v.show != showSecret) {
		if typ == "string" {
			def = fmt.Sprintf("%q", def)
		}
		fmt.Fprintf(w, " (default %s)", def)
	}
	if isEnv {
		fmt.Fprintf(w, " %s", envNote(v))
	}
	fmt.Fprintln(w)
}

func isZero(def string) bool {
	switch def {
	case "", "0", "false", "0s", "[]":
		return true
	}
	return false
}

// envNote is how help shows a flag's environment variable: its value now, unless secret.
func envNote(v *envValue) string {
	raw := os.Getenv(v.env)
	switch {
	case v.show == showSecret && raw != "":
		return "[env " + v.env + ": set, value not shown]"
	case v.show == showSecret:
		return "[env " + v.env + ": not set]"
	case raw == "":
		return "[env " + v.env + "]"
	case v.show == showURL:
		raw = RedactURLs(raw)
	}
	return fmt.Sprintf("[env %s=%q]", v.env, raw)
}
