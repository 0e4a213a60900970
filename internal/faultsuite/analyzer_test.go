package faultsuite

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/loadgen"
)

// committedFloor is the analyzer's acknowledgement floor (stream sequence), 0 before it exists.
func committedFloor(b *bus.Bus) (uint64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := b.Stream(ctx, events.EventsStream)
	if err != nil {
		return 0, err
	}
	info, err := s.ConsumerInfo(ctx, events.AnalyzerConsumer)
	if err != nil {
		return 0, err
	}
	return info.AckFloor.Stream, nil
}

// The analyzer is SIGKILLed three times while it ingests a stream that keeps growing, and
// restarted each time; at the end every event is stored exactly once.
func TestAnalyzerKilledMidIngest(t *testing.T) {
	requireEnv(t, "DITTO_FAULT_TESTS")
	b := build(t)
	dir := testDir(t)
	_, url := single(t, b, dir)
	obs := connect(t, url)
	db := filepath.Join(dir, "ditto.duckdb")
	analyzerArgs := []string{"ingest", "--nats-url", url, "--data-dir", dir, "--db", db, "--stats-every", "1s",
		"--batch-size", "2000"}
	analyzer := start(t, dir, "analyzer", b.analyzer, nil, analyzerArgs...)

	const study, rate, dur = "fault-analyzer", 3000, 12 * time.Second
	report := filepath.Join(dir, "load.json")
	load := start(t, dir, "load", b.producer, nil, "load", "--nats-url", url, "--study", study,
		"--rate", fmt.Sprint(rate), "--duration", dur.String(), "--json", report, "--drain-timeout", "3m")

	// Kill while ingestion is under way: each time once the analyzer has committed more than
	// before, then let the backlog grow before restarting it.
	var killedAt uint64
	for k := 0; k < 3; k++ {
		poll(t, 60*time.Second, "the analyzer to commit more", func() (bool, error) {
			f, err := committedFloor(obs)
			return f > killedAt+3000, err
		})
		// A different moment of the batch cycle each time (fetching, decoding, committing).
		time.Sleep(time.Duration(k) * 170 * time.Millisecond)
		killedAt, _ = committedFloor(obs)
		analyzer.kill()
		t.Logf("analyzer killed at committed floor %d", killedAt)
		poll(t, 30*time.Second, "a backlog", func() (bool, error) {
			s, err := obs.Stream(context.Background(), events.EventsStream)
			if err != nil {
				return false, err
			}
			info, err := s.Info(context.Background())
			return err == nil && info.State.LastSeq > killedAt+2000, err
		})
		analyzer = start(t, dir, "analyzer", b.analyzer, nil, analyzerArgs...)
	}
	if err := load.wait(4 * time.Minute); err != nil {
		t.Fatalf("producer load: %v\n%s", err, load.tail())
	}
	if err := analyzer.stop(30 * time.Second); err != nil {
		t.Logf("analyzer stop: %v", err)
	}
	var rep loadgen.Report
	raw, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Failed != 0 || !rep.Drained {
		t.Fatalf("load: %d publishes failed, drained %v", rep.Failed, rep.Drained)
	}
	c := dbCounts(t, db, study)
	c.StreamEvents = streamCount(t, obs, study)
	checkExactlyOnce(t, c, int64(rep.Published))
	// Runs still open when publishing stopped are incomplete; no attempt was aborted.
	if c.Finished+c.Incomplete != c.Runs || c.Incomplete > loadgen.DefaultOpenRuns || c.Aborted != 0 {
		t.Errorf("runs %d = finished %d + incomplete %d (<= %d open), aborted %d (want 0)",
			c.Runs, c.Finished, c.Incomplete, loadgen.DefaultOpenRuns, c.Aborted)
	}
}
