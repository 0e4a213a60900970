package main

import (
	"flag"
	"strings"
	"testing"

	"github.com/dittolab/ditto/internal/cli/clitest"
)

var update = flag.Bool("update", false, "rewrite harness-worker's part of docs/cli.md")

// TestHelpReference: docs/cli.md holds harness-worker's help and every command's as they print them;
// -update rewrites that part.
func TestHelpReference(t *testing.T) {
	clitest.UnsetEnv(t)
	var ref strings.Builder
	if err := program.WriteReference(&ref); err != nil {
		t.Fatal(err)
	}
	clitest.CheckSection(t, "../../docs/cli.md", "harness-worker", ref.String(), *update)
}
