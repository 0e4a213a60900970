package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/sqlguard"
)

// analyzer serve from a build without the duckdb_arrow tag refuses to start, saying why and how
// to build it, rather than serving a console and an API that fail every request; from the
// build make gives, it passes the check. make test runs this in both builds.
func TestServeNeedsTheArrowBuild(t *testing.T) {
	if sqlguard.CanStream {
		if err := canServe(); err != nil {
			t.Fatalf("canServe() = %v in a build that can answer queries", err)
		}
		return
	}
	// Without the check, serve would start and run until this context ends (exit 0).
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := program.Run(ctx, []string{"serve", "--db", t.TempDir() + "/x.duckdb"}, &stdout, &stderr)
	if code == 0 {
		t.Fatalf("analyzer serve exited 0 in a build without the duckdb_arrow tag; stderr:\n%s", stderr.String())
	}
	for _, want := range []string{"duckdb_arrow", "make build"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("analyzer serve's error does not mention %q:\n%s", want, stderr.String())
		}
	}
}
