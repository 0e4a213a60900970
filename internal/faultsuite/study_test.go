package faultsuite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/nats-io/nats.go/jetstream"
)

// The shipped spec the study tests run: 3 tasks × 2 simulated models × 3 conditions × N = 3.
const (
	studySpec = "builtin:small"
	studyName = "small"
	studyRuns = 54
)

// workerReady is what a worker logs once its consumer exists.
const workerReady = "worker started"

// workerArgs run a worker whose abandoned jobs come back quickly (ack wait 3 s) and whose
// simulated models take a fraction of their modelled latency, so that a run lasts long enough
// to be killed in the middle.
func workerArgs(busArgs ...string) []string {
	return append([]string{"run", "--concurrency", "4", "--ack-wait", "3s", "--sim-latency-scale", "0.25",
		"--log-level", "info"}, busArgs...)
}

// subjectCount counts the stream's messages on a subject filter (an ephemeral consumer's
// pending count).
func subjectCount(t *testing.T, b *bus.Bus, stream, filter string) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := bustest.JetStream(t, b).Stream(ctx, stream)
	if err != nil {
		return 0, err
	}
	cons, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{FilterSubject: filter,
		AckPolicy: jetstream.AckNonePolicy, InactiveThreshold: 10 * time.Second})
	if err != nil {
		return 0, err
	}
	info, err := cons.Info(ctx)
	_ = s.DeleteConsumer(ctx, cons.CachedInfo().Name)
	if err != nil {
		return 0, err
	}
	return int64(info.NumPending), nil
}

// queuedJobs counts the study's jobs still in DITTO_JOBS (queued or in flight). A work-queue
// stream allows no second consumer on the same subjects, so this reads the stream's subject
// counts instead.
func queuedJobs(b *bus.Bus) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := b.Stream(ctx, events.JobsStream)
	if err != nil {
		return 0, err
	}
	subject := "ditto.jobs." + studyName
	counts, err := s.SubjectCounts(ctx, subject)
	if err != nil {
		return 0, err
	}
	return int64(counts[subject]), nil
}

// progress is how many run attempts of the study have started and finished.
func progress(t *testing.T, b *bus.Bus) (started, finished int64, err error) {
	if started, err = subjectCount(t, b, events.EventsStream, fmt.Sprintf("ditto.events.%s.*.%s", studyName, events.TypeRunStarted)); err != nil {
		return
	}
	finished, err = subjectCount(t, b, events.EventsStream, fmt.Sprintf("ditto.events.%s.*.%s", studyName, events.TypeRunFinished))
	return
}

// waitInFlight waits until at least minFinished runs finished and some attempts are running.
func waitInFlight(t *testing.T, b *bus.Bus, minFinished int64) (started, finished int64) {
	t.Helper()
	poll(t, 3*time.Minute, fmt.Sprintf("%d finished runs and runs in flight", minFinished), func() (bool, error) {
		var err error
		started, finished, err = progress(t, b)
		return err == nil && finished >= minFinished && started > finished, err
	})
	return started, finished
}

// waitStudyDone waits until the work queue holds no job of the study (a worker acknowledges a
// job only after every event of its run is acknowledged) and every run has a run.finished.
// It polls with short per-request timeouts itself: a request that went to a node as it died
// must not hang the wait.
func waitStudyDone(t *testing.T, b *bus.Bus, timeout time.Duration) {
	t.Helper()
	poll(t, timeout, "every job of the study done", func() (bool, error) {
		_, f, err := progress(t, b)
		if err != nil {
			return false, err
		}
		jobs, err := queuedJobs(b)
		return err == nil && jobs == 0 && f >= studyRuns, err
	})
}

// waitCaughtUp waits until the analyzer has committed everything in DITTO_EVENTS.
func waitCaughtUp(t *testing.T, b *bus.Bus) {
	t.Helper()
	poll(t, 2*time.Minute, "the analyzer to commit the whole stream", func() (bool, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s, err := b.Stream(ctx, events.EventsStream)
		if err != nil {
			return false, err
		}
		info, err := s.Info(ctx)
		if err != nil {
			return false, err
		}
		floor, err := committedFloor(b)
		return err == nil && floor == info.State.LastSeq, err
	})
}

// checkStudy checks the study's runs in DuckDB: every expected run finished exactly once, the
// events stored exactly once, and reports the aborted attempts.
func checkStudy(t *testing.T, obs *bus.Bus, db string) counts {
	t.Helper()
	c := dbCounts(t, db, studyName)
	c.StreamEvents = streamCount(t, obs, studyName)
	checkExactlyOnce(t, c, c.StreamEvents)
	if c.Runs != studyRuns || c.Finished != studyRuns || c.Incomplete != 0 {
		t.Errorf("runs %d, finished %d, incomplete %d: want %d runs, each finished once", c.Runs, c.Finished, c.Incomplete, studyRuns)
	}
	return c
}

// A worker is SIGKILLed while runs are in flight: its jobs are redelivered to a second worker
// and re-run as new attempts; every run finishes exactly once and the interrupted attempts
// are recorded as aborted.
func TestWorkerKilledMidRun(t *testing.T) {
	requireEnv(t, "DITTO_FAULT_TESTS")
	b := build(t)
	dir := testDir(t)
	_, url := single(t, b, dir)
	obs := connect(t, url)
	db := filepath.Join(dir, "ditto.duckdb")
	analyzer := start(t, dir, "analyzer", b.analyzer, nil, "ingest", "--nats-url", url, "--data-dir", dir, "--db", db, "--stats-every", "0")
	w1 := start(t, dir, "worker-1", b.worker, nil, workerArgs("--nats-url", url, "--worker-id", "w1")...)
	if _, err := run(context.Background(), b.producer, nil, "study", "submit", "--nats-url", url, studySpec); err != nil {
		t.Fatal(err)
	}

	waitInFlight(t, obs, 5)
	w1.kill()
	// Count what was in flight from the stream after the kill, not from the poll before it: the
	// worker may start another run between the two. Wait until two reads agree, so that
	// anything the dead worker had already handed to the server is counted.
	var started, finished int64
	poll(t, 30*time.Second, "the stream to settle after the kill", func() (bool, error) {
		s1, f1, err := progress(t, obs)
		if err != nil {
			return false, err
		}
		if s1 == started && f1 == finished {
			return true, nil
		}
		started, finished = s1, f1
		return false, nil
	})
	inFlight := started - finished
	t.Logf("worker-1 killed with %d run attempts in flight (%d finished)", inFlight, finished)
	w2 := start(t, dir, "worker-2", b.worker, nil, workerArgs("--nats-url", url, "--worker-id", "w2")...)
	waitStudyDone(t, obs, 8*time.Minute)
	if err := w2.stop(time.Minute); err != nil {
		t.Logf("worker-2 stop: %v", err)
	}
	waitCaughtUp(t, obs)
	if err := analyzer.stop(time.Minute); err != nil {
		t.Logf("analyzer stop: %v", err)
	}
	c := checkStudy(t, obs, db)
	// Each attempt the kill interrupted is superseded by a later one and shows as aborted.
	if c.Aborted < 1 || c.Aborted > inFlight {
		t.Errorf("aborted attempts %d, want 1..%d (the attempts in flight at the kill)", c.Aborted, inFlight)
	}
	fmt.Printf("COUNTS %s: expected runs %d, finished %d, runs finished twice %d, aborted attempts %d (in flight at the kill: %d)\n",
		t.Name(), studyRuns, c.Finished, c.DupFinished, c.Aborted, inFlight)
}

// A NATS node — the leader of DITTO_EVENTS — is SIGKILLed during a study on the 3-node cluster
// (R3 streams) and restarted; the study completes and every run is recorded exactly once.
func TestNATSNodeKilledMidStudy(t *testing.T) {
	requireEnv(t, "DITTO_FAULT_TESTS")
	b := build(t)
	dir := testDir(t)
	c := startCluster(t, b, dir, "always")
	defer c.stop()
	url := c.URLs()
	env := []string{"DITTO_REPLICAS=3"}
	obs := connect(t, url)
	db := filepath.Join(dir, "ditto.duckdb")
	analyzer := startReady(t, dir, "analyzer", b.analyzer, env, "msg=ingesting", "ingest", "--nats-url", url, "--data-dir", dir, "--db", db, "--stats-every", "0")
	var workers []*proc
	for i := 1; i <= 2; i++ {
		workers = append(workers, startReady(t, dir, fmt.Sprintf("worker-%d", i), b.worker, env, workerReady,
			workerArgs("--nats-url", url, "--worker-id", fmt.Sprintf("w%d", i))...))
	}
	// Submitted without --wait: the test polls itself (see waitStudyDone).
	if _, err := run(context.Background(), b.producer, env, "study", "submit", "--nats-url", url, studySpec); err != nil {
		t.Fatal(err)
	}

	_, finished := waitInFlight(t, obs, 8)
	victim := c.leaderOf(t, obs, events.EventsStream)
	c.kill(victim)
	t.Logf("killed %s, the leader of %s, after %d runs finished", c.nodes[victim].name, events.EventsStream, finished)
	// The study goes on with two of three nodes.
	poll(t, 2*time.Minute, "progress with a node down", func() (bool, error) {
		_, f, err := progress(t, obs)
		return err == nil && f >= finished+5, err
	})
	c.restart(victim)
	waitStudyDone(t, obs, 8*time.Minute)
	for _, w := range workers {
		if err := w.stop(time.Minute); err != nil {
			t.Logf("%s stop: %v", w.name, err)
		}
	}
	waitCaughtUp(t, obs)
	if err := analyzer.stop(time.Minute); err != nil {
		t.Logf("analyzer stop: %v", err)
	}
	cnt := checkStudy(t, obs, db)
	c.checkReplicas(t, obs)
	fmt.Printf("COUNTS %s: expected runs %d, finished %d, runs finished twice %d, aborted attempts %d\n",
		t.Name(), studyRuns, cnt.Finished, cnt.DupFinished, cnt.Aborted)
}

// leaderOf returns the index of the node leading stream.
func (c *cluster) leaderOf(t *testing.T, b *bus.Bus, stream string) int {
	t.Helper()
	leader := -1
	poll(t, 30*time.Second, stream+" to have a leader", func() (bool, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s, err := b.Stream(ctx, stream)
		if err != nil {
			return false, err
		}
		info, err := s.Info(ctx)
		if err != nil || info.Cluster == nil {
			return false, err
		}
		for i, n := range c.nodes {
			if "ditto-"+n.name == info.Cluster.Leader {
				leader = i
			}
		}
		return leader >= 0, nil
	})
	return leader
}

// checkReplicas checks that both streams are still R3 with every replica current: no ditto
// process scaled them down, and the restarted node caught up.
func (c *cluster) checkReplicas(t *testing.T, b *bus.Bus) {
	t.Helper()
	for _, name := range []string{events.EventsStream, events.JobsStream} {
		poll(t, time.Minute, name+" R3 with all replicas current", func() (bool, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			s, err := b.Stream(ctx, name)
			if err != nil {
				return false, err
			}
			info, err := s.Info(ctx)
			if err != nil {
				return false, err
			}
			if info.Config.Replicas != 3 || info.Cluster == nil || len(info.Cluster.Replicas) != 2 {
				return false, fmt.Errorf("%s: replicas %d", name, info.Config.Replicas)
			}
			for _, r := range info.Cluster.Replicas {
				if !r.Current || r.Offline {
					return false, fmt.Errorf("%s: replica %s not current", name, r.Name)
				}
			}
			return true, nil
		})
	}
}

// The embedded single-process default — a worker process that hosts the embedded nats-server
// (file store under its data directory) and the simulated models — is SIGKILLed mid-study,
// taking NATS down with it, and started again on the same data directory: the study resumes
// from the store and completes without duplicates.
func TestEmbeddedKilledMidStudy(t *testing.T) {
	requireEnv(t, "DITTO_FAULT_TESTS")
	b := build(t)
	dir := testDir(t)
	data := filepath.Join(dir, "data")
	port := freePort(t)
	hostArgs := workerArgs("--data-dir", data, "--nats-port", fmt.Sprint(port), "--worker-id", "embedded")
	host := start(t, dir, "embedded", b.worker, nil, hostArgs...)
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	poll(t, time.Minute, "the embedded server", func() (bool, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		bb, err := bus.Open(ctx, bus.Config{URL: url})
		if err != nil {
			return false, err
		}
		defer bb.Close()
		_, err = bb.Stream(ctx, events.JobsStream)
		return err == nil, err
	})
	obs := connect(t, url)
	db := filepath.Join(dir, "ditto.duckdb")
	// The analyzer and the submitter join the embedded server through the data directory.
	analyzer := start(t, dir, "analyzer", b.analyzer, nil, "ingest", "--data-dir", data, "--db", db, "--stats-every", "0")
	if _, err := run(context.Background(), b.producer, nil, "study", "submit", "--data-dir", data, studySpec); err != nil {
		t.Fatal(err)
	}
	_, finished := waitInFlight(t, obs, 8)
	host.kill()
	t.Logf("embedded host killed after %d runs finished", finished)
	host = start(t, dir, "embedded", b.worker, nil, hostArgs...)
	waitStudyDone(t, obs, 8*time.Minute)
	waitCaughtUp(t, obs)
	if err := analyzer.stop(time.Minute); err != nil {
		t.Logf("analyzer stop: %v", err)
	}
	c := checkStudy(t, obs, db)
	if err := host.stop(time.Minute); err != nil {
		t.Logf("embedded stop: %v", err)
	}
	fmt.Printf("COUNTS %s: expected runs %d, finished %d, runs finished twice %d, aborted attempts %d\n",
		t.Name(), studyRuns, c.Finished, c.DupFinished, c.Aborted)
}
