// Command harness-worker is ditto's harness worker: it runs the jobs of studies under the
// harness, against real or simulated models. Its subcommands are listed below, one file each;
// 'harness-worker --help' prints them.
package main

import "github.com/dittolab/ditto/internal/cli"

var program = cli.Program{
	Name:    "harness-worker",
	Summary: "runs study jobs under the harness against real or simulated models",
	Commands: []cli.Command{
		{Name: "run", Run: runWorker,
			Summary: "pull run jobs from DITTO_JOBS and run them under the harness until SIGTERM"},
		{Name: "sim-serve", Run: runSimServe,
			Summary: "serve the simulated models as an OpenAI-compatible API on a loopback address"},
	},
}

func main() { program.Main() }
