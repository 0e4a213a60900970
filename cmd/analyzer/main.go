// Command analyzer is ditto's analyzer. Each subcommand is in its own file and registers itself in
// init; see 'go run ./cmd/analyzer help'.
package main

import "github.com/dittolab/ditto/internal/cli"

var commands = cli.NewSet("analyzer")

func main() { commands.Main() }
