package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/dittolab/ditto/internal/cli"
	"github.com/dittolab/ditto/internal/queryapi"
	"github.com/dittolab/ditto/internal/warehouse"
)

type exportConfig struct {
	target    target
	dir       string
	overwrite bool
}

func runExport(ctx context.Context, fs *flag.FlagSet, args []string) error {
	var cfg exportConfig
	cfg.target.registerFlags(fs)
	fs.StringVar(&cfg.dir, "parquet", "", "directory to write the Parquet files to (empty or new)")
	fs.BoolVar(&cfg.overwrite, "overwrite", false, "replace an earlier export in --parquet (a directory holding its manifest.json)")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", cli.ErrUsage, fs.Args())
	}
	if cfg.dir == "" {
		return fmt.Errorf("%w: --parquet DIR is required", cli.ErrUsage)
	}
	cfg.target.resolve()
	return export(ctx, cfg, os.Stdout)
}

func export(ctx context.Context, cfg exportConfig, out io.Writer) error {
	dir, err := filepath.Abs(cfg.dir)
	if err != nil {
		return err
	}
	if err := prepareExportDir(dir, cfg.overwrite); err != nil {
		return err
	}
	c, err := cfg.target.client(ctx)
	if err != nil {
		return err
	}
	var m *queryapi.ExportManifest
	if c != nil {
		// The serving analyzer holds the file: it writes the Parquet and streams it here.
		m, err = c.Export(ctx, dir)
	} else {
		db, oerr := cfg.target.open(ctx, dir)
		if oerr != nil {
			return oerr
		}
		defer db.Close()
		m, err = queryapi.Export(ctx, db, dir, warehouse.Tables())
	}
	if err != nil {
		return err
	}
	for _, t := range m.Tables {
		how := "one file"
		if t.PartitionBy != "" {
			how = "partitioned by " + t.PartitionBy
		}
		fmt.Fprintf(out, "%-18s %9d rows  %s (%s)\n", t.Name, t.Rows, filepath.Join(dir, t.Path), how)
	}
	fmt.Fprintf(out, "manifest: %s\n", filepath.Join(dir, queryapi.ManifestName))
	return nil
}

// prepareExportDir makes sure dir is new or empty; with overwrite, an earlier export there
// (recognized by its manifest) is removed first. Nothing else is ever deleted.
func prepareExportDir(dir string, overwrite bool) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) || (err == nil && len(ents) == 0) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, merr := os.Stat(filepath.Join(dir, queryapi.ManifestName)); merr != nil || !overwrite {
		return fmt.Errorf("%w: %s is not empty (use an empty directory, or --overwrite to replace an earlier export)", cli.ErrUsage, dir)
	}
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}
