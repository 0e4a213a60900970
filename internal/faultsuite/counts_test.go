package faultsuite

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/dittolab/ditto/internal/warehouse"
	"github.com/nats-io/nats.go/jetstream"
)

// counts are what a fault test checks at the end, for one study.
type counts struct {
	Study        string
	StreamEvents int64 // messages of the study in DITTO_EVENTS
	Events       int64 // rows in DuckDB's events
	DistinctIDs  int64
	DupIDs       int64 // rows beyond the first of an id
	DupSeqs      int64 // (run, attempt, seq) stored more than once
	Rejected     int64 // rejected_events rows (all studies)
	Runs         int64 // distinct runs
	Finished     int64 // runs whose last attempt finished (status not incomplete/aborted)
	DupFinished  int64 // runs with more than one non-aborted finished attempt
	Aborted      int64 // attempts recorded as aborted
	Incomplete   int64 // last attempts without run.finished
}

func (c counts) String() string {
	return fmt.Sprintf("study %s: stream %d, stored %d (distinct ids %d), duplicate ids %d, duplicate (run,attempt,seq) %d, rejected %d; runs %d, finished %d, runs finished twice %d, aborted attempts %d, incomplete %d",
		c.Study, c.StreamEvents, c.Events, c.DistinctIDs, c.DupIDs, c.DupSeqs, c.Rejected, c.Runs, c.Finished, c.DupFinished, c.Aborted, c.Incomplete)
}

// streamCount counts the study's messages in DITTO_EVENTS.
func streamCount(t *testing.T, b *bus.Bus, study string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := bustest.JetStream(t, b).Stream(ctx, events.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	// An ephemeral consumer filtered on the study: its pending count is the study's messages
	// (cheaper than listing every subject of a large study).
	cons, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{
		FilterSubject: "ditto.events." + study + ".>", AckPolicy: jetstream.AckNonePolicy,
		DeliverPolicy: jetstream.DeliverAllPolicy, InactiveThreshold: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_ = s.DeleteConsumer(ctx, info.Name)
	return int64(info.NumPending)
}

// dbCounts opens the analyzer's database read-only (the analyzer must be stopped: DuckDB lets
// one process open a file) and counts. Its deadline only bounds a query that hangs: the counts
// of a 15-minute load run (18 million events) take longer than a minute.
func dbCounts(t *testing.T, path, study string) counts {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	w, err := warehouse.Open(ctx, warehouse.Config{Path: path, ReadOnly: true})
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer w.Close()
	db := w.DB()
	c := counts{Study: study}
	one := func(dst *int64, q string, args ...any) {
		t.Helper()
		if err := db.QueryRowContext(ctx, q, args...).Scan(dst); err != nil && err != sql.ErrNoRows {
			t.Fatalf("%s: %v", q, err)
		}
	}
	one(&c.Events, `SELECT count(*) FROM events WHERE study = ?`, study)
	one(&c.DistinctIDs, `SELECT count(DISTINCT id) FROM events WHERE study = ?`, study)
	c.DupIDs = c.Events - c.DistinctIDs
	one(&c.DupSeqs, `SELECT coalesce(sum(n - 1), 0) FROM (SELECT count(*) AS n FROM events WHERE study = ? GROUP BY run, attempt, seq HAVING count(*) > 1)`, study)
	if c.DupSeqs > 0 {
		rows, err := db.QueryContext(ctx, `SELECT run, attempt, seq, string_agg(type || ' ' || id || ' ' || source_id || ' ' || strftime(time, '%H:%M:%S.%f'), ' | ' ORDER BY stream_seq)
			FROM events WHERE study = ? GROUP BY run, attempt, seq HAVING count(*) > 1 LIMIT 10`, study)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var run, detail string
			var attempt, seq int64
			if err := rows.Scan(&run, &attempt, &seq, &detail); err != nil {
				t.Fatal(err)
			}
			t.Logf("(run %s, attempt %d, seq %d) stored more than once: %s", run, attempt, seq, detail)
		}
		rows.Close()
	}
	one(&c.Rejected, `SELECT count(*) FROM rejected_events`)
	one(&c.Runs, `SELECT count(DISTINCT run) FROM runs WHERE study = ? AND run <> '_study'`, study)
	one(&c.Finished, `SELECT count(*) FROM runs WHERE study = ? AND last_attempt AND status NOT IN ('incomplete', 'aborted')`, study)
	one(&c.DupFinished, `SELECT count(*) FROM (SELECT run FROM runs WHERE study = ? AND status NOT IN ('incomplete', 'aborted') GROUP BY run HAVING count(*) > 1)`, study)
	one(&c.Aborted, `SELECT count(*) FROM runs WHERE study = ? AND status = 'aborted'`, study)
	one(&c.Incomplete, `SELECT count(*) FROM runs WHERE study = ? AND status = 'incomplete'`, study)
	return c
}

// checkExactlyOnce fails unless every event of the stream is stored once and nothing twice.
func checkExactlyOnce(t *testing.T, c counts, expected int64) {
	t.Helper()
	fmt.Printf("COUNTS %s: expected %d, %s\n", t.Name(), expected, c)
	if c.StreamEvents != expected || c.Events != expected || c.DistinctIDs != expected {
		t.Errorf("expected %d events: stream %d, stored %d, distinct %d", expected, c.StreamEvents, c.Events, c.DistinctIDs)
	}
	if c.DupIDs != 0 || c.DupSeqs != 0 || c.DupFinished != 0 {
		t.Errorf("duplicates: ids %d, (run,attempt,seq) %d, runs finished twice %d; want 0", c.DupIDs, c.DupSeqs, c.DupFinished)
	}
	if c.Rejected != 0 {
		t.Errorf("rejected %d, want 0", c.Rejected)
	}
}
