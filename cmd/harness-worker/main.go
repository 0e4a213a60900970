// Command harness-worker is ditto's harness-worker. Each subcommand is in its own file and registers itself in
// init; see 'go run ./cmd/harness-worker help'.
package main

import "github.com/dittolab/ditto/internal/cli"

var commands = cli.NewSet("harness-worker")

func main() { commands.Main() }
