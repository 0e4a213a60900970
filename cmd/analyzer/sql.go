package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/dittolab/ditto/internal/cli"
	"github.com/dittolab/ditto/internal/queryapi"
	"github.com/dittolab/ditto/internal/report"
	"github.com/dittolab/ditto/internal/sqlguard"
)

type sqlCommandConfig struct {
	target  target
	format  string // table, csv or json
	limit   int
	timeout time.Duration
	query   string
}

func runSQLCommand(ctx context.Context, fs *flag.FlagSet, args []string) error {
	var cfg sqlCommandConfig
	cfg.target.registerFlags(fs)
	fs.StringVar(&cfg.format, "format", "table", "output: table (aligned), json, jsonl, columns, csv, arrow or parquet")
	fs.IntVar(&cfg.limit, "limit", 0, "row limit (default: the server's, 10,000 for a local file)")
	fs.DurationVar(&cfg.timeout, "timeout", 0, "query timeout (default: the server's, 30s for a local file)")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() != 1:
		return fmt.Errorf("%w: give one query argument (quoted; - reads stdin)", cli.ErrUsage)
	case cfg.format != "table" && !slices.Contains(queryapi.Formats, queryapi.Format(cfg.format)):
		return fmt.Errorf("%w: --format %q, want table, json, jsonl, columns, csv, arrow or parquet", cli.ErrUsage, cfg.format)
	case cfg.limit < 0 || cfg.timeout < 0:
		return fmt.Errorf("%w: negative --limit or --timeout", cli.ErrUsage)
	}
	cfg.query = fs.Arg(0)
	if cfg.query == "-" {
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			return err
		}
		cfg.query = string(b)
	}
	if strings.TrimSpace(cfg.query) == "" {
		return fmt.Errorf("%w: empty query", cli.ErrUsage)
	}
	cfg.target.resolve()
	return sqlCommand(ctx, cfg, os.Stdout)
}

func sqlCommand(ctx context.Context, cfg sqlCommandConfig, out io.Writer) error {
	c, err := cfg.target.client(ctx)
	if err != nil {
		return err
	}
	if c != nil {
		return sqlRemote(ctx, c, cfg, out)
	}
	db, err := cfg.target.open(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	g, err := sqlguard.New(db, sqlguard.Config{})
	if err != nil {
		return err
	}
	rows, err := g.Stream(ctx, cfg.query, sqlguard.Limits{Rows: cfg.limit, Timeout: cfg.timeout})
	if err != nil {
		return err
	}
	defer rows.Close()
	if cfg.format != "table" {
		sum, err := queryapi.WriteAnswer(out, queryapi.Format(cfg.format), rows)
		if err == nil {
			err = sum.Err
		}
		return err
	}
	var buf bytes.Buffer
	sum, err := queryapi.WriteAnswer(&buf, queryapi.FormatColumns, rows)
	if err == nil {
		err = sum.Err
	}
	if err != nil {
		return err
	}
	t, err := queryapi.DecodeTable(&buf)
	if err != nil {
		return err
	}
	return report.WriteQueryTable(out, t)
}

func sqlRemote(ctx context.Context, c *queryapi.Client, cfg sqlCommandConfig, out io.Writer) error {
	req := queryapi.SQLRequest{SQL: cfg.query, Limit: cfg.limit, Format: cfg.format}
	if cfg.timeout > 0 {
		req.Timeout = cfg.timeout.String()
	}
	if cfg.format == "table" {
		t, err := c.Query(ctx, req)
		if err != nil {
			return err
		}
		return report.WriteQueryTable(out, t)
	}
	body, err := c.QueryRaw(ctx, req)
	if err != nil {
		return err
	}
	defer body.Close()
	_, err = io.Copy(out, body)
	return err
}
