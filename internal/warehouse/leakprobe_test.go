//go:build duckdb_arrow

package warehouse

import (
	"context"
	"database/sql/driver"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/cdata"
)

// TestLeakProbe measures, opt-in (DITTO_LEAK_PROBE=insert, view, export, commit or query), how
// much of glibc's heap in use, beyond the events' Arrow records, one step of ingestion leaves
// behind, over 2,000 repetitions on one database, and fails above 1 KiB a step:
//
//   - insert: BEGIN, the events' INSERT from a registered Arrow view, COMMIT (a batch's load);
//   - view: registering the Arrow view and releasing it, nothing else;
//   - export: arrow-go's export of the record reader to a C stream and its release;
//   - commit: BEGIN, the watermark's UPDATE, COMMIT;
//   - query: a one-row query.
//
// DITTO_LEAK_RECONNECT=k closes the connection (for good) every k steps.
//
// Measured on 2026-12-02 (DuckDB's C API through duckdb-go v2): insert about 16 KB a step and
// view about 12 KB, with or without reconnecting and with the view dropped: DuckDB's
// duckdb_arrow_scan takes the stream's schema (get_schema) and never releases it, so the
// schema arrow-go exported (C memory) stays (duckdb/duckdb#16050, closed unmerged). export 0,
// commit about 0.6 KB, query 0. At 20,000 events/s (two batches a second) that is about 1.4
// MiB a minute of the analyzer's glibc heap, most of what rose through the 15-minute load run.
// It fails until that is worked around; CI does not run it.
func TestLeakProbe(t *testing.T) {
	variant := os.Getenv("DITTO_LEAK_PROBE")
	if variant == "" {
		t.Skip("DITTO_LEAK_PROBE not set (opt-in: a measurement of a known DuckDB leak)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	w, err := Open(ctx, Config{Path: filepath.Join(t.TempDir(), "p.duckdb"), Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var items []*item
	for i, sm := range sampleLines(t) {
		it := &item{subject: sm.subject, raw: sm.line, streamSeq: uint64(i + 1)}
		decodeItem(it)
		if it.rej == nil {
			items = append(items, it)
		}
	}
	if len(items) == 0 {
		t.Fatal("no good items")
	}
	t.Logf("%d events a record", len(items))
	br := buildFor(items)
	defer br.release()
	conn, err := w.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	reconnect := 0
	fmt.Sscan(os.Getenv("DITTO_LEAK_RECONNECT"), &reconnect)
	if reconnect > 0 {
		w.db.SetMaxIdleConns(0)
	}
	step := func(i int) error {
		if reconnect > 0 && i%reconnect == reconnect-1 {
			conn.Close()
			if conn, err = w.db.Conn(ctx); err != nil {
				return err
			}
		}
		switch variant {
		case "insert":
			if _, err := conn.ExecContext(ctx, "BEGIN TRANSACTION"); err != nil {
				return err
			}
			if err := loadEvents(ctx, conn, br.rec); err != nil {
				return err
			}
			_, err := conn.ExecContext(ctx, "COMMIT")
			return err
		case "view":
			return withBatchView(conn, br.rec, func(dc any) error {
				if os.Getenv("DITTO_LEAK_DROP") == "" {
					return nil
				}
				_, err := dc.(driver.ExecerContext).ExecContext(ctx, "DROP VIEW IF EXISTS ingest_batch", nil)
				return err
			})
		case "export":
			rec := asJSONPayload(br.rec)
			defer rec.Release()
			rdr, err := array.NewRecordReader(eventsViewSchema, []arrow.RecordBatch{rec})
			if err != nil {
				return err
			}
			defer rdr.Release()
			stream := new(cdata.CArrowArrayStream)
			cdata.ExportRecordReader(rdr, stream)
			if os.Getenv("DITTO_LEAK_SCHEMA") != "" {
				r, err := cdata.ImportCRecordReader(stream, nil)
				if err != nil {
					return err
				}
				for {
					rec, err := r.Read()
					if err != nil {
						break
					}
					_ = rec
				}
				return nil
			}
			cdata.ReleaseCArrowArrayStream(stream)
			return nil
		case "commit":
			if _, err := conn.ExecContext(ctx, "BEGIN TRANSACTION"); err != nil {
				return err
			}
			if err := setWatermark(ctx, conn, "probe", uint64(i+1), 1, 0, 0); err != nil {
				return err
			}
			_, err := conn.ExecContext(ctx, "COMMIT")
			return err
		case "query":
			var n int64
			return conn.QueryRowContext(ctx, "SELECT count(*) FROM ingest_state WHERE stream = ?", "x").Scan(&n)
		}
		return fmt.Errorf("unknown variant %q", variant)
	}
	inUse := func() int64 {
		releaseFreeMemory()
		_, u, _, _ := readMalloc()
		return int64(u) - recordMalloc.AllocatedBytes()
	}
	for i := 0; i < 50; i++ {
		if err := step(i); err != nil {
			t.Fatal(err)
		}
	}
	base := inUse()
	const n = 2000
	for i := 0; i < n; i++ {
		if err := step(i); err != nil {
			t.Fatal(err)
		}
		if (i+1)%500 == 0 {
			t.Logf("%s: after %d: glibc in use beyond records %+d bytes (%.0f bytes an iteration)", variant, i+1, inUse()-base, float64(inUse()-base)/float64(i+1))
		}
	}
	if per := float64(inUse()-base) / n; per > 1024 {
		t.Errorf("%s: glibc's heap in use grew %.0f bytes a step over %d steps, want at most 1 KiB", variant, per, n)
	}
}
