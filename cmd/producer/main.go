// Command producer is ditto's producer: it hosts the embedded NATS server, submits studies,
// and brings production events in (HTTP and OTLP, JSON-lines files). Its subcommands are
// listed below, one file each; 'producer --help' prints them.
package main

import "github.com/dittolab/ditto/internal/cli"

var program = cli.Program{
	Name:    "producer",
	Summary: "hosts the embedded NATS server, submits studies, and publishes production events",
	Commands: []cli.Command{
		{Name: "host", Run: runHost,
			Summary: "host the embedded NATS server for --data-dir until interrupted (for other processes and the nats CLI)"},
		{Name: "study validate", Usage: "SPEC", Run: runStudyValidate,
			Summary: "check a study spec and show the runs it expands to (SPEC: a JSON file, or builtin:NAME)"},
		{Name: "study submit", Usage: "[flags] SPEC", Run: runStudySubmit,
			Summary: "publish a study's jobs and its study.defined (idempotent; --wait to follow it)"},
		{Name: "study status", Usage: "[flags] NAME", Run: runStudyStatus,
			Summary: "progress and outcomes of a submitted study"},
		{Name: "serve", Run: runServe,
			Summary: "ingestion server for production agents: POST /v1/events, OTLP/HTTP /v1/traces and /v1/logs, OTLP/gRPC, /metrics; assembles traces into runs"},
		{Name: "import", Usage: "[flags] FILE...   (- reads stdin)", Run: runImport,
			Summary: "publish events from JSON-lines files; report each invalid line (exit status 1 if any)"},
		{Name: "summary", Run: runSummary,
			Summary: "summarise what the events stream holds, by study and event type"},
		{Name: "load", Run: runLoad,
			Summary: "publish realistic run events at --rate for --duration and measure the analyzer's end-to-end rate, lag and memory"},
	},
}

func main() { program.Main() }
