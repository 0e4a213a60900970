package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
)

// WriteReference writes p's help and each command's as Markdown: a "### <binary>" section with
// the program's help, then a "#### <binary> <command>" section per command, each in a text
// block. docs/cli.md holds it for every binary, and a test in each cmd package fails when that
// copy is stale. The help shows the environment's DITTO_ variables: clear them first.
func (p Program) WriteReference(w io.Writer) error {
	section := func(heading string, args ...string) error {
		var help bytes.Buffer
		if code := p.Run(context.Background(), args, &help, io.Discard); code != 0 {
			return fmt.Errorf("cli: %s %s exited %d", p.Name, strings.Join(args, " "), code)
		}
		_, err := fmt.Fprintf(w, "\n%s\n\n```text\n%s```\n", heading, help.String())
		return err
	}
	if err := section("### "+p.Name, "--help"); err != nil {
		return err
	}
	for _, c := range p.Commands {
		if err := section("#### "+p.Name+" "+c.Name, append(strings.Fields(c.Name), "--help")...); err != nil {
			return err
		}
	}
	return nil
}
