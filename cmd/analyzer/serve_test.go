package main

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/dittolab/ditto/internal/leaktest"
	"github.com/dittolab/ditto/internal/queryapi"
	"github.com/dittolab/ditto/internal/receiver"
	"github.com/dittolab/ditto/internal/sqlguard/sqlguardtest"
)

// serveTestLines are events of two planned studies, without tool calls: alpha expects 5 runs
// and has 3 finished and 1 still running; beta expects 2 and has both.
func serveTestLines(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	id := 0
	line := func(typ, study, run string, seq int, payload string) {
		id++
		fmt.Fprintf(&b, `{"schema":1,"id":"01SERVETEST%015d","type":%q,"time":"2026-11-30T09:00:%02dZ","study":%q,"run":%q,"attempt":1,"seq":%d,"source":{"kind":"harness","id":"w1"},"payload":%s}`+"\n",
			id, typ, id%60, study, run, seq, payload)
	}
	for _, s := range []struct {
		study          string
		expected, done int
		running        bool
	}{{"alpha", 5, 3, true}, {"beta", 2, 2, false}} {
		line("study.defined", s.study, "_study", 0, fmt.Sprintf(
			`{"name":"Study %s","cells":[{"task":"t1","model":"m1","condition":"harness","runs":%d}],"expected_runs":%d,"paired":false}`,
			s.study, s.expected, s.expected))
		n := s.done
		if s.running {
			n++
		}
		for i := 0; i < n; i++ {
			run := fmt.Sprintf("%s-%d", s.study, i)
			line("run.started", s.study, run, 1, `{"task":"t1","input_index":0,"seed_index":0,"model":"m1","condition":"harness","components":[],"sampling":{}}`)
			if i < s.done {
				line("run.finished", s.study, run, 2, `{"status":"succeeded","success":true,"totals":{"prompt_tokens":10,"completion_tokens":5,"model_calls":1,"tool_calls":0,"retries":0,"plan_reprompts":0,"rejected_tool_calls":0,"latency_ms":100}}`)
			}
		}
	}
	return b.String()
}

func publishLines(t *testing.T, b *bus.Bus, lines string) {
	t.Helper()
	res, err := receiver.Import(context.Background(), b, strings.NewReader(lines), receiver.ImportConfig{})
	if err != nil || len(res.Rejected) > 0 {
		t.Fatalf("import: %v, rejected %+v", err, res.Rejected)
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		ok, err := cond()
		if ok {
			return
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s (last error %v)", what, last)
}

// serveConfigFor is the configuration the serve tests start from: the test's nats-server, a
// data directory, and the API on a free loopback port, with token ("" for none).
func serveConfigFor(natsURL, dataDir, token string) serveConfig {
	var cfg serveConfig
	cfg.bus = bus.Config{URL: natsURL, DataDir: dataDir}
	cfg.listen = "127.0.0.1:0"
	cfg.token = token
	return cfg
}

// servingAnalyzer is `analyzer serve` run in the test's process (startServe).
type servingAnalyzer struct {
	client *queryapi.Client // its query API, found through the data directory's analyzer.url
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

// startServe validates cfg, runs serve with it and waits until its query API is advertised in
// the data directory. Serve runs until stop, or until the test ends, when an error of its is
// reported.
func startServe(t *testing.T, cfg serveConfig) *servingAnalyzer {
	t.Helper()
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &servingAnalyzer{cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- serve(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	t.Cleanup(func() {
		if err := s.stop(); err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	waitFor(t, "analyzer.url", func() (bool, error) {
		var err error
		s.client, err = queryapi.Discover(ctx, cfg.bus.DataDir, cfg.token)
		return err == nil, err
	})
	return s
}

// stop stops serve and returns what it returned, or an error when it has not returned within
// 30 s. Only its first call stops; the others return the same.
func (s *servingAnalyzer) stop() error {
	s.once.Do(func() {
		s.cancel()
		select {
		case s.err = <-s.done:
		case <-time.After(30 * time.Second):
			s.err = errors.New("serve did not stop within 30 s")
		}
	})
	return s.err
}

func findStudy(st []queryapi.Study, name string) *queryapi.Study {
	for i := range st {
		if st[i].Study == name {
			return &st[i]
		}
	}
	return nil
}

// TestServeEndToEnd runs `analyzer serve` against a real embedded nats-server and a DuckDB
// file, and uses sql, status and export through it while it ingests; then, with serve
// stopped, the same commands open the file read-only and agree.
func TestServeEndToEnd(t *testing.T) {
	sqlguardtest.NeedsQueries(t)
	srv := bustest.NewServer(t)
	b := srv.Connect(t)
	publishLines(t, b, serveTestLines(t))
	// Everything running now is the test's (the nats-server, its client); what serve starts
	// must be gone once it returns.
	before := goleak.IgnoreCurrent()

	dataDir := t.TempDir()
	const token = "test-token"
	cfg := serveConfigFor(srv.ClientURL(), dataDir, token)
	cfg.ingest.BatchWait = 50 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	running := startServe(t, cfg)
	c := running.client

	tgt := target{dataDir: dataDir, token: token}
	tgt.resolve()
	waitFor(t, "ingestion of both studies", func() (bool, error) {
		st, err := c.Studies(ctx)
		a, bt := findStudy(st, "alpha"), findStudy(st, "beta")
		return a != nil && bt != nil && a.FinishedRuns == 3 && bt.FinishedRuns == 2, err
	})

	// analyzer sql, routed to the server.
	var out bytes.Buffer
	err := sqlCommand(ctx, sqlCommandConfig{target: tgt, format: "table",
		query: "SELECT study, count(*) AS runs FROM runs GROUP BY study ORDER BY study"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	wantTable := "study  runs\n-----  ----\nalpha     4\nbeta      2\n(2 rows)\n"
	if out.String() != wantTable {
		t.Errorf("sql table =\n%s\nwant\n%s", out.String(), wantTable)
	}
	out.Reset()
	if err := sqlCommand(ctx, sqlCommandConfig{target: tgt, format: "csv", query: "SELECT study, expected_runs, finished_runs FROM studies ORDER BY study"}, &out); err != nil {
		t.Fatal(err)
	}
	if want := "study,expected_runs,finished_runs\nalpha,5,3\nbeta,2,2\n"; out.String() != want {
		t.Errorf("sql csv = %q, want %q", out.String(), want)
	}
	// The guard holds through the server, and the token is needed.
	var se *queryapi.StatusError
	err = sqlCommand(ctx, sqlCommandConfig{target: tgt, format: "table", query: "DROP TABLE events"}, io.Discard)
	if !errors.As(err, &se) || se.Status != http.StatusForbidden {
		t.Errorf("DROP through serve = %v, want 403", err)
	}
	noTok := tgt
	noTok.token = ""
	if err := sqlCommand(ctx, sqlCommandConfig{target: noTok, format: "table", query: "SELECT 1"}, io.Discard); !errors.Is(err, queryapi.ErrUnauthorized) {
		t.Errorf("sql without the token = %v, want ErrUnauthorized", err)
	}

	// analyzer status, plain text (not a terminal).
	out.Reset()
	if err := status(ctx, statusConfig{target: tgt}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"alpha  3/5 runs finished (60.0%), incomplete 1", "beta   2/2 runs finished (100.0%)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, out.String())
		}
	}

	// Ingestion goes on while the API serves: one more run of alpha finishes.
	publishLines(t, b, `{"schema":1,"id":"01SERVETESTLATE00000000001","type":"run.finished","time":"2026-11-30T09:01:00Z","study":"alpha","run":"alpha-3","attempt":1,"seq":2,"source":{"kind":"harness","id":"w1"},"payload":{"status":"failed","success":false,"totals":{"prompt_tokens":1,"completion_tokens":1,"model_calls":1,"tool_calls":0,"retries":0,"plan_reprompts":0,"rejected_tool_calls":0,"latency_ms":5}}}`+"\n")
	waitFor(t, "the late run.finished", func() (bool, error) {
		st, err := c.Studies(ctx)
		a := findStudy(st, "alpha")
		return a != nil && a.FinishedRuns == 4 && a.IncompleteRuns == 0, err
	})

	// analyzer export through serve (the file is locked by it).
	expDir := filepath.Join(t.TempDir(), "export")
	out.Reset()
	if err := export(ctx, exportConfig{target: tgt, dir: expDir}, &out); err != nil {
		t.Fatal(err)
	}
	served, err := queryapi.ReadManifest(expDir)
	if err != nil {
		t.Fatal(err)
	}
	checkExportCounts(t, c, expDir, served)

	// /metrics carries the warehouse's ingestion metrics.
	_, body := bearerDo(t, http.MethodGet, c.BaseURL+"/metrics", token, "")
	// 13 events of the first import, 1 late one.
	for _, want := range []string{"ditto_analyzer_consumer_lag", "ditto_analyzer_events_ingested_total 14",
		"ditto_analyzer_batch_seconds_bucket", "ditto_analyzer_rejected_events_total 0", "ditto_analyzer_ingest_rate",
		`ditto_analyzer_sql_queries_total{outcome="refused"} 1`, `ditto_analyzer_memory_bytes{part="go_heap"}`,
		`ditto_analyzer_memory_bytes{part="duckdb"}`, `ditto_analyzer_memory_bytes{part="folded"}`} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("/metrics lacks %q", want)
		}
	}

	// Stop serve: it returns, and its URL file is gone.
	if err := running.stop(); err != nil {
		t.Fatalf("serve: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dataDir, queryapi.URLFileName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("analyzer.url after serve stopped: %v", err)
	}
	c.HTTP.CloseIdleConnections()
	http.DefaultClient.CloseIdleConnections()
	// The durable consumer serve created lives on in the (test's) nats-server, by design.
	leaktest.VerifyNone(t, before,
		goleak.IgnoreTopFunction("github.com/nats-io/nats-server/v2/server.(*consumerFileStore).flushLoop"),
		goleak.IgnoreAnyFunction("github.com/nats-io/nats-server/v2/server.(*consumer).setLeader.func2"),
		goleak.IgnoreAnyFunction("github.com/nats-io/nats-server/v2/server.(*consumer).setLeader.func3"),
		goleak.IgnoreAnyFunction("github.com/nats-io/nats-server/v2/server.(*consumer).setLeader.func4"))
	// Nor does any of the warehouse's files stay open: a DuckDB instance kept alive would make
	// the next open of the file spin in DuckDB's instance cache.
	leaktest.FilesClosed(t, dataDir)

	// Without a server, the same commands open the file read-only and agree.
	bg := context.Background()
	out.Reset()
	err = sqlCommand(bg, sqlCommandConfig{target: tgt, format: "table",
		query: "SELECT study, count(*) AS runs FROM runs GROUP BY study ORDER BY study"}, &out)
	if err != nil || out.String() != wantTable {
		t.Errorf("local sql = %v\n%s", err, out.String())
	}
	if err := sqlCommand(bg, sqlCommandConfig{target: tgt, format: "table", query: "DELETE FROM events"}, io.Discard); err == nil {
		t.Error("local DELETE succeeded")
	}
	localDir := filepath.Join(t.TempDir(), "export")
	if err := export(bg, exportConfig{target: tgt, dir: localDir}, io.Discard); err != nil {
		t.Fatal(err)
	}
	local, err := queryapi.ReadManifest(localDir)
	if err != nil {
		t.Fatal(err)
	}
	for i, et := range local.Tables {
		if i >= len(served.Tables) || served.Tables[i].Name != et.Name || served.Tables[i].Rows != et.Rows {
			t.Errorf("local export %s: %d rows; through serve %+v", et.Name, et.Rows, served.Tables)
		}
	}
	// An existing export is not overwritten without --overwrite, and is with it.
	if err := export(bg, exportConfig{target: tgt, dir: localDir}, io.Discard); err == nil {
		t.Error("export into a non-empty directory succeeded")
	}
	if err := export(bg, exportConfig{target: tgt, dir: localDir, overwrite: true}, io.Discard); err != nil {
		t.Errorf("export --overwrite: %v", err)
	}
	out.Reset()
	if err := status(bg, statusConfig{target: tgt}, &out); err != nil || !strings.Contains(out.String(), "alpha  4/5") {
		t.Errorf("local status = %v\n%s", err, out.String())
	}
}

// checkExportCounts compares every exported table's Parquet row count, read by an in-memory
// DuckDB, with the count the serving analyzer gives for the table.
func checkExportCounts(t *testing.T, c *queryapi.Client, dir string, m *queryapi.ExportManifest) {
	t.Helper()
	if len(m.Tables) == 0 {
		t.Fatal("empty export")
	}
	reader, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	sawPartitions := false
	for _, et := range m.Tables {
		tab, err := c.Query(context.Background(), queryapi.SQLRequest{SQL: "SELECT count(*) FROM " + et.Name})
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprint(tab.Rows[0][0])
		if fmt.Sprint(et.Rows) != want {
			t.Errorf("manifest %s: %d rows, the server counts %s", et.Name, et.Rows, want)
		}
		if et.Rows == 0 {
			continue
		}
		src := filepath.Join(dir, et.Path)
		if et.PartitionBy != "" {
			sawPartitions = true
			src = filepath.Join(src, "*", "*.parquet")
		}
		var n int64
		if err := reader.QueryRow("SELECT count(*) FROM read_parquet(?)", src).Scan(&n); err != nil {
			t.Fatalf("read %s: %v", src, err)
		}
		if fmt.Sprint(n) != want {
			t.Errorf("Parquet %s: %d rows, want %s", et.Name, n, want)
		}
	}
	if !sawPartitions {
		t.Error("no table was partitioned by study")
	}
	for _, p := range []string{"events/study=alpha", "events/study=beta", "runs/study=alpha"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("export lacks %s", p)
		}
	}
}

// bearerDo sends method to url with the bearer token and body (none if empty) and returns the
// answer's status and body.
func bearerDo(t *testing.T, method, url, token, body string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}
