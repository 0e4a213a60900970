package main

import (
	"context"
	"errors"
	"flag"
	"testing"

	"github.com/dittolab/ditto/internal/cli"
)

func TestQueryCommandUsage(t *testing.T) {
	tests := []struct {
		name string
		run  func(context.Context, *flag.FlagSet, []string) error
		args []string
	}{
		{"sql without a query", runSQLCommand, nil},
		{"sql with two queries", runSQLCommand, []string{"SELECT 1", "SELECT 2"}},
		{"sql with two queries around a flag", runSQLCommand, []string{"SELECT 1", "--format", "csv", "SELECT 2"}},
		{"sql bad format", runSQLCommand, []string{"--format", "xml", "SELECT 1"}},
		{"sql bad format after the query", runSQLCommand, []string{"SELECT 1", "--format", "xml"}},
		{"sql empty query", runSQLCommand, []string{"  "}},
		{"export without --parquet", runExport, nil},
		{"export with an argument", runExport, []string{"--parquet", t.TempDir(), "extra"}},
		{"status short interval", runStatus, []string{"--interval", "1ms"}},
		{"serve bad listen", runServe, []string{"--listen", "nowhere"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.run(context.Background(), flag.NewFlagSet(tt.name, flag.ContinueOnError), tt.args); !errors.Is(err, cli.ErrUsage) {
				t.Errorf("%v = %v, want ErrUsage", tt.args, err)
			}
		})
	}
}
