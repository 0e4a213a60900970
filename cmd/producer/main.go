// Command producer is ditto's producer. Each subcommand is in its own file and registers itself in
// init; see 'go run ./cmd/producer help'.
package main

import "github.com/dittolab/ditto/internal/cli"

var commands = cli.NewSet("producer")

func main() { commands.Main() }
