package main

import (
	"context"
	"os"

	"github.com/dittolab/ditto/internal/cli"
)

func init() {
	commands.Register(cli.Command{
		Name:    "summary",
		Summary: "summarise what the events stream holds, by study and event type",
		Run:     runSummary,
	})
}

func runSummary(ctx context.Context, args []string) error {
	_, cfg, err := parseBusFlags("summary", args)
	if err != nil {
		return err
	}
	b, err := openBus(ctx, cfg)
	if err != nil {
		return err
	}
	defer b.Close()
	sum, err := Summarize(ctx, b)
	if err != nil {
		return err
	}
	sum.Print(os.Stdout)
	return nil
}
