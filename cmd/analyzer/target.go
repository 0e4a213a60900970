package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/cli"
	"github.com/dittolab/ditto/internal/queryapi"
	"github.com/dittolab/ditto/internal/sqlguard"
	"github.com/dittolab/ditto/internal/warehouse"
)

// target is where the query-side subcommands (sql, export, status) find the data: the API of
// an analyzer serving the data directory, or else the database file opened read-only. DuckDB
// lets no other process open a file that one process is writing, even read-only, so while
// `analyzer serve` runs the API is the only way in.
type target struct {
	dataDir string
	dbPath  string
	url     string // an analyzer's base URL; overrides <data-dir>/analyzer.url
	token   string
	local   bool // never use the API
}

func (t *target) registerFlags(fs *flag.FlagSet) {
	cli.String(fs, &t.dataDir, "data-dir", "DITTO_DATA_DIR", bus.DefaultDataDir, "data directory (finds <data-dir>/analyzer.url and the database)")
	fs.StringVar(&t.dbPath, "db", "", "DuckDB database file (default <data-dir>/"+warehouse.DefaultFile+")")
	cli.URL(fs, &t.url, "url", "DITTO_ANALYZER_URL", "", "a serving analyzer's base URL (default: the one in <data-dir>/analyzer.url)")
	cli.Secret(fs, &t.token, "token", "DITTO_ANALYZER_TOKEN", "bearer token of the analyzer's API")
	fs.BoolVar(&t.local, "local", false, "open the database file read-only even if an analyzer serves it")
}

func (t *target) resolve() {
	if t.dbPath == "" {
		t.dbPath = warehouse.DefaultPath(t.dataDir)
	}
}

// client returns the API client to use, or nil to open the file. An explicit --url must
// answer; a stale analyzer.url is ignored.
func (t *target) client(ctx context.Context) (*queryapi.Client, error) {
	if t.local {
		return nil, nil
	}
	if t.url != "" {
		c := queryapi.NewClient(t.url, t.token)
		if err := c.Health(ctx); err != nil {
			return nil, fmt.Errorf("analyzer at %s: %w", cli.RedactURLs(t.url), err)
		}
		return c, nil
	}
	c, err := queryapi.Discover(ctx, t.dataDir, t.token)
	if errors.Is(err, queryapi.ErrNoServer) {
		return nil, nil
	}
	return c, err
}

// open opens the database file read-only and hardened; allowedDirs stay writable for COPY.
func (t *target) open(ctx context.Context, allowedDirs ...string) (*sql.DB, error) {
	db, err := sqlguard.OpenReadOnly(ctx, t.dbPath, allowedDirs...)
	if err == nil {
		return db, nil
	}
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no database at %s (has the analyzer ingested anything? see --data-dir, --db)", t.dbPath)
	}
	if strings.Contains(strings.ToLower(err.Error()), "lock") {
		hint := "no analyzer API answers for " + t.dataDir + "; pass its address with --url"
		if t.local {
			hint = "query it through the analyzer's API (without --local)"
		}
		return nil, fmt.Errorf("%s is open in another process (a running analyzer?): %s: %w", t.dbPath, hint, err)
	}
	return nil, err
}
