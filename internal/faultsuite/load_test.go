package faultsuite

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/cli"
	"github.com/dittolab/ditto/internal/loadgen"
)

// loadRow is one line of the load session's summary.
type loadRow struct {
	mode      string
	rate      float64
	rep       loadgen.Report
	stored    int64 // events of the study in DuckDB at the end
	benchRate float64
	benchErr  string
	sustained bool // the lag verdict (Report.Sustained)
	// analyzerToExit is the analyzer's CPU from the first publish until it exited (its
	// rusage at exit less its CPU before the first publish): what the run's events cost it,
	// the final checkpoint at close included, which the report's until-committed figure
	// misses (and the idle seconds of nats bench, which cost next to nothing).
	analyzerToExit time.Duration
}

// The analyzer's DuckDB and memory settings for the load runs, unless
// DITTO_LOAD_ANALYZER_FLAGS (make load ANALYZER_FLAGS=..., "none" for none) and
// DITTO_LOAD_GOMEMLIMIT ("off" for none) say otherwise. DuckDB's buffer pool is capped so that
// it can fill up within a 5-minute run (DuckDB's own default is 80% of the machine's RAM, which a
// 5-minute run would still be filling). The checkpoint threshold is the analyzer's own
// (warehouse.DefaultCheckpointThreshold). Until the twenty-eighth session the load set 256 MB:
// while DuckDB merged small row groups at checkpoints, rewriting them, fewer checkpoints cost
// less (deploy/README.md); with the merging off a checkpoint costs what the WAL holds, and a
// larger one only holds a commit longer. GOMEMLIMIT makes the analyzer's Go runtime collect
// before its heap's GC slack reaches the limit (a soft limit: it does not hide a live heap that
// grows; it does not cover DuckDB's C memory).
const (
	defaultAnalyzerFlags = "--duckdb-memory 256MB"
	defaultGoMemLimit    = "256MiB"
)

// TestLoad is the sustained-load session of `make load`: for each mode and each rate,
// `producer load` publishes for the duration while the analyzer ingests; then `nats bench js
// pub async` measures raw JetStream publishing with the same settings (file storage, replicas,
// dedup, the mean event size) on the same server. Modes: embedded — the embedded default, one
// data directory: a `producer host` process hosts the embedded nats-server (the server's
// default sync) and the analyzer joins it through <data-dir>/nats.url, so that each process's
// memory is measured on its own; cluster — three nats-server processes, R3 streams,
// sync_interval always. The summary gives the lag verdict (held) and the memory verdict of
// the analyzer and the NATS process(es) apart, and each process's RSS trend.
func TestLoad(t *testing.T) {
	requireEnv(t, "DITTO_LOAD")
	b := build(t)
	var rates []float64
	for _, s := range strings.Split(envOr("DITTO_LOAD_RATE", "2000"), ",") {
		r, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			t.Fatalf("DITTO_LOAD_RATE: %v", err)
		}
		rates = append(rates, r)
	}
	dur, err := time.ParseDuration(envOr("DITTO_LOAD_DURATION", "30s"))
	if err != nil {
		t.Fatalf("DITTO_LOAD_DURATION: %v", err)
	}
	if dir := os.Getenv("DITTO_LOAD_PROFILE"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatalf("DITTO_LOAD_PROFILE: %v", err)
		}
	}
	modes := []string{envOr("DITTO_LOAD_MODE", "embedded")}
	if modes[0] == "both" {
		modes = []string{"embedded", "cluster"}
	}
	var rows []loadRow
	for _, mode := range modes {
		for _, rate := range rates {
			t.Run(fmt.Sprintf("%s/%.0f", mode, rate), func(t *testing.T) {
				rows = append(rows, loadOnce(t, b, mode, rate, dur))
			})
		}
	}
	flags, memLimit := analyzerMemory()
	fmt.Printf("\nLOAD SUMMARY (duration %s; rates in events/s; analyzer: %s, GOMEMLIMIT=%s; producer load: %q)\n", dur, strings.Join(flags, " "), memLimit,
		os.Getenv("DITTO_LOAD_FLAGS"))
	fmt.Printf("held = lag bounded (Sustained); mem = the analyzer's memory verdict, nats-mem the NATS process(es)' (bounded, growing, unresolved or unknown): per process, the RSS slope over the second half of the time judged (publishing, while the stream stored events)\n")
	fmt.Printf("      <= %.0f MiB/min or <= %.2f x the first half's, with its 95%% interval; the analyzer's floors judged around its reattaches (see internal/loadgen/memtrend.go); memory columns = peak RSS (VmHWM)\n",
		loadgen.FlatSlope, loadgen.BoundedRatio)
	fmt.Printf("cpu = CPU µs per event published (user + system, /proc/<pid>/stat, from the first publish until all was committed), analyzer/nats/producer\n")
	fmt.Printf("%-9s %7s %9s %9s %8s %8s %9s %6s %10s %10s %9s %10s %11s %9s %10s %6s %16s\n", "mode", "target", "published", "end2end", "drain",
		"max-lag", "lag-slope", "held", "mem", "nats-mem", "stored", "analyzer", "nats", "producer", "nats-bench", "ratio", "cpu")
	for _, r := range rows {
		var nats, natsMem []string
		analyzerMem := loadgen.MemUnknown
		for _, m := range r.rep.Memory {
			switch {
			case strings.HasPrefix(m.Name, "nats-"):
				nats = append(nats, fmt.Sprintf("%.0f", mibOf(m.PeakKiB)))
				natsMem = append(natsMem, m.Verdict)
			case m.Name == "analyzer":
				analyzerMem = m.Verdict
			}
		}
		ratio := "-"
		if r.benchRate > 0 {
			ratio = fmt.Sprintf("%.3f", r.rep.EndToEndRate/r.benchRate)
		}
		var natsCPU float64 // the nodes of a cluster together
		for _, c := range r.rep.CPU {
			if strings.HasPrefix(c.Name, "nats-") {
				natsCPU += c.PerEvent
			}
		}
		cpu := fmt.Sprintf("%.1f/%.1f/%.1f", cpuOf(r.rep, "analyzer"), natsCPU, cpuOf(r.rep, "producer"))
		fmt.Printf("%-9s %7.0f %9.0f %9.0f %8s %8d %+9.1f %6v %10s %10s %9d %9.0fM %11s %8.0fM %10.0f %6s %16s\n", r.mode, r.rate, r.rep.PublishRate,
			r.rep.EndToEndRate, r.rep.Drain.Round(10*time.Millisecond), r.rep.MaxLag, r.rep.LagSlope, r.sustained, analyzerMem,
			strings.Join(natsMem, "/"), r.stored,
			mibOf(peakOf(r.rep, "analyzer")), strings.Join(nats, "/")+"M", mibOf(peakOf(r.rep, "producer")), r.benchRate, ratio, cpu)
		if r.benchErr != "" {
			fmt.Printf("  nats bench: %s\n", r.benchErr)
		}
	}
	fmt.Printf("\nMEMORY (RSS in MiB at the first sample, 1/4, 1/2 and end of the time judged (publishing, while the stream stored events); least-squares slopes in MiB/min over each half of the peaks and of the floors of the RSS in spans of two 30-second windows (of two tenths of a run under 5 minutes), the second half's with the half-width of its 95%% interval)\n")
	fmt.Printf("%-9s %7s %-20s %8s %8s %8s %8s %8s %9s %16s %9s %16s  %s\n", "mode", "target", "process", "peak", "start", "1/4", "1/2", "end",
		"peaks-1", "peaks-2", "floors-1", "floors-2", "verdict")
	for _, r := range rows {
		for _, m := range r.rep.Memory {
			fmt.Printf("%-9s %7.0f %-20s %8.1f %8.1f %8.1f %8.1f %8.1f %+9.2f %+8.2f ±%6.2f %+9.2f %+8.2f ±%6.2f  %s\n", r.mode, r.rate, m.Name, mibOf(m.PeakKiB),
				mibOf(m.StartKiB), mibOf(m.QuarterKiB), mibOf(m.HalfKiB), mibOf(m.EndKiB), m.FirstSlope, m.SecondSlope, m.SecondSlopeHalfWidth,
				m.FirstFloorSlope, m.SecondFloorSlope, m.SecondFloorSlopeHalfWidth, m.Verdict)
			if m.Releases > 0 {
				fmt.Printf("%-9s %7s %-20s floors judged around its reattaches (%d spans of its stats lines): %d samples left out (from %s before the stats line before each to %s after the line that counts it)\n", "", "", "",
					m.Releases, m.FloorSamplesLeftOut, statsSkew, loadgen.ReleaseRefill)
			}
		}
	}
	fmt.Printf("\nCPU (user + system; publishing: from the first publish to the last; run: until the analyzer had committed everything;\n")
	fmt.Printf("     cores = CPU while publishing / its wall time; machine = every process on it, others' included)\n")
	fmt.Printf("%-9s %7s %-14s %10s %7s %8s %10s\n", "mode", "target", "process", "publish-s", "cores", "run-s", "µs/event")
	for _, r := range rows {
		for _, c := range r.rep.CPU {
			if c.Err != "" {
				fmt.Printf("%-9s %7.0f %-14s %s\n", r.mode, r.rate, c.Name, c.Err)
				continue
			}
			fmt.Printf("%-9s %7.0f %-14s %10.1f %7.2f %8.1f %10.1f\n", r.mode, r.rate, c.Name, c.Publishing.Seconds(), c.Cores,
				c.Total.Seconds(), c.PerEvent)
		}
		if r.analyzerToExit > 0 && r.rep.Published > 0 {
			fmt.Printf("%-9s %7.0f %-14s %10s %7s %8.1f %10.1f  (analyzer until it exited: its final checkpoint included)\n", r.mode, r.rate,
				"analyzer-exit", "", "", r.analyzerToExit.Seconds(), float64(r.analyzerToExit.Microseconds())/float64(r.rep.Published))
		}
	}
}

func mibOf(kib int64) float64 { return float64(kib) / 1024 }

// cpuOf is the CPU µs per event of the named process, 0 when it was not measured.
func cpuOf(rep loadgen.Report, name string) float64 {
	for _, c := range rep.CPU {
		if c.Name == name {
			return c.PerEvent
		}
	}
	return 0
}

func peakOf(rep loadgen.Report, name string) int64 {
	for _, m := range rep.Memory {
		if m.Name == name {
			return m.PeakKiB
		}
	}
	return 0
}

// analyzerMemory returns the analyzer's extra flags and its GOMEMLIMIT ("off": not set).
func analyzerMemory() (flags []string, goMemLimit string) {
	switch f := strings.TrimSpace(os.Getenv("DITTO_LOAD_ANALYZER_FLAGS")); f {
	case "":
		flags = strings.Fields(defaultAnalyzerFlags)
	case "none":
	default:
		flags = strings.Fields(f)
	}
	return flags, envOr("DITTO_LOAD_GOMEMLIMIT", defaultGoMemLimit)
}

// profileEnv is the environment that has a ditto process of the load write a CPU profile of
// its run to DITTO_LOAD_PROFILE/<name>-<mode>-<rate>.pprof (make load PROFILE=dir), and heap
// profiles to <name>-<mode>-<rate>.heap at its end and every DITTO_LOAD_HEAP_EVERY (5m by
// default; make load HEAP_EVERY=…, 0 for none) to .heap.<seconds>s, or none.
func profileEnv(name, mode string, rate float64) []string {
	dir := os.Getenv("DITTO_LOAD_PROFILE")
	if dir == "" {
		return nil
	}
	base := filepath.Join(dir, fmt.Sprintf("%s-%s-%.0f", name, mode, rate))
	return []string{cli.CPUProfileEnv + "=" + base + ".pprof", cli.HeapProfileEnv + "=" + base + ".heap",
		cli.HeapProfileEveryEnv + "=" + envOr("DITTO_LOAD_HEAP_EVERY", "5m")}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func loadOnce(t *testing.T, b *bins, mode string, rate float64, dur time.Duration) loadRow {
	dir := testDir(t)
	checkDiskFor(t, dir, mode, rate, dur)
	db := filepath.Join(dir, "ditto.duckdb")
	row := loadRow{mode: mode, rate: rate}
	var url string
	var env []string
	replicas := 1
	watch := map[string]int{}
	var analyzer, host *proc
	var c *cluster
	flags, memLimit := analyzerMemory()
	analyzerEnv := func() []string {
		e := append(profileEnv("analyzer", mode, rate), env...)
		if memLimit == "off" {
			return e
		}
		return append(e, "GOMEMLIMIT="+memLimit)
	}
	switch mode {
	case "embedded":
		// The embedded default on one data directory: the first ditto process hosts
		// nats-server (file store, the server's default sync interval) and advertises it in
		// <data-dir>/nats.url; the analyzer, started second, joins it. `producer host` is that
		// first process, so the broker's memory is measured apart from the analyzer's.
		port := freePort(t)
		host = start(t, dir, "nats-embedded", b.producer, profileEnv("nats-embedded", mode, rate), "host", "--data-dir", dir, "--nats-port", fmt.Sprint(port))
		url = fmt.Sprintf("nats://127.0.0.1:%d", port)
		poll(t, 60*time.Second, "producer host serving the embedded NATS", func() (bool, error) {
			raw, err := os.ReadFile(filepath.Join(dir, "nats.url"))
			return err == nil && strings.TrimSpace(string(raw)) == url, err
		})
		analyzer = startReady(t, dir, "analyzer", b.analyzer, analyzerEnv(), "msg=ingesting", append([]string{"ingest", "--data-dir", dir,
			"--db", db, "--stats-every", "5s"}, flags...)...)
		// It must have joined the host, not started a server of its own.
		if log, _ := os.ReadFile(analyzer.log); !strings.Contains(string(log), "nats="+url) {
			t.Fatalf("the analyzer did not join the embedded server at %s; log:\n%s", url, analyzer.tail())
		}
		watch["nats-embedded"] = host.pid()
	case "cluster":
		c = startCluster(t, b, dir, envOr("DITTO_LOAD_SYNC", "always"))
		defer c.stop()
		// The cluster's ports are fixed: a node that could not bind them has exited, and the
		// streams answered from another session's cluster (make test-faults at the same time).
		for _, n := range c.nodes {
			if !n.p.running() {
				t.Fatalf("nats %s exited at start (ports 2422x/2622x held by another cluster?); log:\n%s", n.name, n.p.tail())
			}
		}
		url, replicas = c.URLs(), 3
		env = []string{"DITTO_REPLICAS=3"}
		analyzer = startReady(t, dir, "analyzer", b.analyzer, analyzerEnv(), "msg=ingesting", append([]string{"ingest", "--nats-url", url,
			"--data-dir", dir, "--db", db, "--stats-every", "5s"}, flags...)...)
		for _, n := range c.nodes {
			watch["nats-"+n.name] = n.p.pid()
		}
	default:
		t.Fatalf("mode %q: want embedded, cluster or both", mode)
	}
	watch["analyzer"] = analyzer.pid()
	var ws []string
	for name, pid := range watch {
		ws = append(ws, fmt.Sprintf("%s=%d", name, pid))
	}
	study := fmt.Sprintf("load-%s-%.0f", mode, rate)
	report := filepath.Join(dir, "load.json")
	// DITTO_LOAD_FLAGS (make load LOAD_FLAGS=...) adds flags of producer load's own.
	loadArgs := append([]string{"load", "--nats-url", url, "--study", study, "--rate", fmt.Sprint(rate), "--duration", dur.String(),
		"--json", report, "--drain-timeout", max(time.Minute, dur).String(), "--watch", strings.Join(ws, ",")},
		strings.Fields(os.Getenv("DITTO_LOAD_FLAGS"))...)
	load := start(t, dir, "load", b.producer, append(profileEnv("producer", mode, rate), env...), loadArgs...)
	lerr := load.wait(dur + max(time.Minute, dur) + time.Minute)
	if out, err := os.ReadFile(load.log); err == nil {
		fmt.Print(string(out)) // the report prints at most ~30 sample lines
	}
	raw, err := os.ReadFile(report)
	if err != nil {
		t.Fatalf("no load report (%v): %v\n%s", lerr, err, load.tail())
	}
	if err := json.Unmarshal(raw, &row.rep); err != nil {
		t.Fatal(err)
	}
	// The analyzer's reattaches let go of DuckDB's memory on purpose; its stats lines tell
	// when, and its memory is judged again with them left out of its floors (loadgen.Release).
	if err := judgeAroundReattaches(&row.rep, analyzer.log, report); err != nil {
		t.Errorf("judging the analyzer's memory around its reattaches: %v", err)
	}
	row.sustained = row.rep.Sustained()
	if row.rep.Failed > 0 {
		// The broker refused them (a full disk, a stream at its limits): the run did not apply
		// its load, and its figures are not those of its rate.
		t.Errorf("%d of %d publishes were not acknowledged, refused or timed out (batches: %s): the run did not apply its load", row.rep.Failed, row.rep.Published,
			row.rep.BatchStopped)
	}
	if !row.rep.Drained {
		fmt.Printf("the analyzer did not commit every stored event in time; the end of its log:\n%s\n", analyzer.tail())
	}
	// The stream must hold each published event once (the publisher sets Nats-Msg-Id; the
	// duplicate window is 10 minutes): more means JetStream stored duplicates, which the
	// analyzer then dropped by id, and the report's stream counts include them.
	obs := connect(t, url)
	n := streamCount(t, obs, study)
	if n != int64(row.rep.Published-row.rep.Failed) {
		t.Errorf("DITTO_EVENTS holds %d messages of %s, want %d (published %d, failed %d)", n, study,
			row.rep.Published-row.rep.Failed, row.rep.Published, row.rep.Failed)
	}
	// The stream was new: anything else in it was published by another process — in cluster
	// mode, another session's fault test that found these fixed ports taken and joined this
	// cluster (its analyzer then shares the durable consumer, and the figures mean nothing).
	if total := streamTotal(t, obs); total != uint64(n) {
		t.Errorf("DITTO_EVENTS holds %d messages, %d of them not of %s: another process published to this server during the run",
			total, total-uint64(n), study)
	}
	// nats bench on the same server(s), same settings, while the analyzer idles.
	if cli := os.Getenv("DITTO_NATSCLI"); cli != "" {
		row.benchRate, err = natsBench(cli, url, replicas, row.rep.MeanSize, dur)
		if err != nil {
			row.benchErr = err.Error()
		}
	}
	if err := analyzer.stop(60 * time.Second); err != nil {
		t.Logf("analyzer stop: %v", err)
	}
	if st := analyzer.cmd.ProcessState; st != nil {
		for _, c := range row.rep.CPU {
			if c.Name == "analyzer" && c.Err == "" {
				row.analyzerToExit = st.UserTime() + st.SystemTime() - c.AtStart
			}
		}
	}
	printMemoryTrail(analyzer.log)
	if host != nil {
		if err := host.stop(30 * time.Second); err != nil {
			t.Logf("producer host stop: %v", err)
		}
	}
	cnt := dbCounts(t, db, study)
	row.stored = cnt.Events
	if want := int64(row.rep.Published - row.rep.Failed); cnt.Events != want || cnt.DupIDs != 0 {
		t.Errorf("DuckDB holds %d events of %s (%d duplicate ids), want %d", cnt.Events, study, cnt.DupIDs, want)
	}
	return row
}

// Disk a load run takes, per event published (measured at 20,000 events/s of ~660 bytes,
// twenty-sixth session: 1.1 GB a minute): the stream's file store, and the store and DuckDB's
// file together.
const (
	streamBytesPerEvent = 800
	diskBytesPerEvent   = 950
)

// clusterFileStore is the file store each node of deploy/local may use (max_file_store: 4GB).
const clusterFileStore = 4 << 30

// checkDiskFor fails the test at once when the disk under dir cannot hold a run of rate for dur:
// the embedded server limits JetStream's file store to 75% of the disk free when it starts (the
// nodes of a cluster to clusterFileStore each, every one holding a copy of the R3 stream on this
// one disk), and once the stream is full every publish is refused (insufficient resources) and
// the run measures nothing (a 60-minute run at 20,000 events/s stopped storing after 50 minutes).
func checkDiskFor(t *testing.T, dir, mode string, rate float64, dur time.Duration) {
	t.Helper()
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		t.Logf("free disk under %s unknown: %v", dir, err)
		return
	}
	free := float64(fs.Bavail) * float64(fs.Bsize)
	events := rate * dur.Seconds()
	stream, all := events*streamBytesPerEvent, events*diskBytesPerEvent
	limit := 0.75 * free
	if mode == "cluster" {
		limit, all = min(clusterFileStore, free/3), all+2*stream
	}
	if stream > limit || all > free {
		t.Fatalf("%s at %.0f events/s in %s mode needs about %.0f GB of disk (the stream %.0f GB, which JetStream allows up to %.0f GB here); %s has %.0f GB free",
			dur, rate, mode, all/1e9, stream/1e9, limit/1e9, dir, free/1e9)
	}
}

// streamTotal is the number of messages in DITTO_EVENTS.
func streamTotal(t *testing.T, b *bus.Bus) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := b.Stream(ctx, events.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

var benchRate = regexp.MustCompile(`stats: ([0-9,]+) msgs/sec`)

// natsBench publishes with `nats bench js pub async` into a file-stored stream with the given
// replicas and dedup on (as ditto's Nats-Msg-Id), messages of size bytes, for about as many
// messages as 20 s of the ditto rate would be (at least 50,000), and returns msgs/sec.
func natsBench(cli, url string, replicas, size int, dur time.Duration) (float64, error) {
	if size <= 0 {
		size = 700
	}
	msgs := 100_000
	if replicas > 1 {
		msgs = 50_000
	}
	args := []string{"bench", "js", "pub", "async", "-s", url, "--create", "--storage", "file",
		"--replicas", fmt.Sprint(replicas), "--dedup", "--size", fmt.Sprintf("%dB", size), "--msgs", fmt.Sprint(msgs),
		"--clients", "1", "--no-progress", "--stream", "ditto_bench", "ditto_bench.pub"}
	out, err := exec.Command(cli, args...).CombinedOutput()
	_ = exec.Command(cli, "-s", url, "stream", "rm", "ditto_bench", "-f").Run()
	if err != nil {
		return 0, fmt.Errorf("nats %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	m := benchRate.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("no msgs/sec in nats bench output:\n%s", out)
	}
	return strconv.ParseFloat(strings.ReplaceAll(string(m[1]), ",", ""), 64)
}

// memoryField matches the event count and the memory figures (each part of
// warehouse.Memory.Parts, with _mib) of the analyzer's periodic ingest log line.
var memoryField = regexp.MustCompile(`\b(events|[a-z_]+_mib)=(\S+)`)

// printMemoryTrail prints, from the analyzer's log, its own view of where its memory is (Go
// heap, DuckDB's buffer manager and allocator, glibc's heap, the filter of folded attempts
// outside the Go heap, RSS): of every six lines (30 s at
// --stats-every 5s), the one with the largest RSS, so that the trail shows what the peaks the
// memory verdict reads are made of.
func printMemoryTrail(logPath string) {
	raw, err := os.ReadFile(logPath)
	if err != nil {
		return
	}
	fmt.Println("analyzer memory (its own log, the largest RSS of each six lines: events stored, Go heap objects, live at the last collection, memory the Go runtime holds, duckdb_memory(),")
	fmt.Println("  DuckDB's allocator (jemalloc) allocated, in active pages and resident, glibc's heap held, in use and free, the events' Arrow records in it and their pool, the filter of folded attempts outside the Go heap, RSS; MiB):")
	var lines []string
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.Contains(line, "msg=ingest ") {
			lines = append(lines, line)
		}
	}
	for i := 0; i < len(lines); i += 6 {
		var top []string
		topRSS := -1.0
		for _, line := range lines[i:min(i+6, len(lines))] {
			var parts []string
			rss := 0.0
			for _, m := range memoryField.FindAllStringSubmatch(line, -1) {
				parts = append(parts, m[1]+"="+m[2])
				if m[1] == "rss_mib" {
					rss, _ = strconv.ParseFloat(m[2], 64)
				}
			}
			if rss > topRSS {
				top, topRSS = parts, rss
			}
		}
		fmt.Println("  " + strings.Join(top, " "))
	}
	if len(lines) > 0 {
		// The counters of its last stats line: how many batches needed their ids looked up in
		// DuckDB (a stream in id order needs none), what was not stored, and in how many
		// transactions (events over transactions is their mean size: a DuckDB row group,
		// 122,880, when every one was).
		var parts []string
		for _, m := range counterField.FindAllStringSubmatch(lines[len(lines)-1], -1) {
			parts = append(parts, m[1]+"="+m[2])
		}
		fmt.Println("analyzer counters (its last stats line): " + strings.Join(parts, " "))
	}
}

// judgeAroundReattaches judges the analyzer's memory in rep again, the reattaches its stats lines
// in logPath tell of left out of its floors, prints the new verdict and writes rep back to
// reportPath.
func judgeAroundReattaches(rep *loadgen.Report, logPath, reportPath string) error {
	if rep.Began.IsZero() {
		return fmt.Errorf("%s does not say when publishing began", reportPath)
	}
	all, err := reattachReleases(logPath, rep.Began)
	if err != nil {
		return err
	}
	// Those of the drain, after publishing, touch no sample of the verdict's.
	var rel []loadgen.Release
	for _, r := range all {
		if r.To+loadgen.ReleaseRefill > 0 && r.From < rep.Duration {
			rel = append(rel, r)
		}
	}
	// The analyzer less its filter of folded attempts, beside it: what grows apart from the one
	// part known to grow with the data stored.
	lessErr := addLessFilter(rep, logPath)
	if lessErr != nil {
		fmt.Printf("memory analyzer not judged less its filter: %v\n", lessErr)
	}
	// And its memory part by part, each judged as a process of its own: which part grows.
	byPart, partsErr := addParts(rep, logPath)
	if partsErr != nil {
		fmt.Printf("memory analyzer not judged by part: %v\n", partsErr)
	}
	// Each process again, over the time the load was applied (loadgen's loadTime: less than
	// the publishing time when the stream stopped storing events well before it ended), the
	// analyzer around its reattaches.
	for _, m := range rep.Memory {
		if m.Err != "" {
			continue
		}
		var r []loadgen.Release
		if m.Name == "analyzer" || m.Name == lessFilterName || m.Name == partPrefix+"duckdb" {
			r = rel
		}
		if err := rep.JudgeMemory(m.Name, r); err != nil {
			return err
		}
	}
	for _, m := range rep.Memory {
		if m.Name == "analyzer" {
			if m.JudgedOver < rep.Duration {
				fmt.Printf("memory judged over the first %s of publishing, while the stream stored events\n", m.JudgedOver.Round(time.Second))
			}
			fmt.Printf("memory analyzer judged around its reattaches (%d spans of its stats lines with one or more while publishing; %d samples left out of its floors): floors %+.2f and %+.2f ± %.2f MiB/min, peaks %+.2f and %+.2f ± %.2f: %s\n",
				m.Releases, m.FloorSamplesLeftOut, m.FirstFloorSlope, m.SecondFloorSlope, m.SecondFloorSlopeHalfWidth,
				m.FirstSlope, m.SecondSlope, m.SecondSlopeHalfWidth, m.Verdict)
		}
		if m.Name == lessFilterName {
			fmt.Printf("memory analyzer less its filter of folded attempts (the folded_mib of its stats lines subtracted from each sample between two lines that give the filter the same size; the samples between two that differ left out): floors %+.2f and %+.2f ± %.2f MiB/min, peaks %+.2f and %+.2f ± %.2f: %s\n",
				m.FirstFloorSlope, m.SecondFloorSlope, m.SecondFloorSlopeHalfWidth,
				m.FirstSlope, m.SecondSlope, m.SecondSlopeHalfWidth, m.Verdict)
		}
	}
	if partsErr == nil {
		fmt.Printf("memory analyzer by part (%d of its stats lines, each on the sample nearest it; left out: %d without every part, %d outside the samples; the second half's slopes also in MiB a million events published):\n",
			byPart.used, byPart.incomplete, byPart.outside)
		rate := rep.PublishRate
		if rate <= 0 { // a report without it
			rate = rep.Rate
		}
		perM := func(slope float64) float64 { return slope / (rate * 60 / 1e6) }
		for _, m := range rep.Memory {
			if !strings.HasPrefix(m.Name, partPrefix) {
				continue
			}
			fmt.Printf("  %-18s peaks %+.2f and %+.2f ± %.2f MiB/min (%+.3f a million events), floors %+.2f and %+.2f ± %.2f (%+.3f): %s\n",
				m.Name, m.FirstSlope, m.SecondSlope, m.SecondSlopeHalfWidth, perM(m.SecondSlope),
				m.FirstFloorSlope, m.SecondFloorSlope, m.SecondFloorSlopeHalfWidth, perM(m.SecondFloorSlope), m.Verdict)
		}
	}
	raw, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(reportPath, raw, 0o644)
}

// lessFilterName names the analyzer's memory less its filter of folded attempts in a load's
// report (addLessFilter).
const lessFilterName = "analyzer-less-filter"

// foldedSize matches the time and the filter's size of the analyzer's stats line.
var foldedSize = regexp.MustCompile(`^time=(\S+) .*\bmsg=ingest .*\bfolded_mib=([0-9]+(?:\.[0-9]+)?)\b`)

// addLessFilter adds to rep, as the process lessFilterName, the analyzer's RSS less the filter
// of folded attempts that its stats lines in logPath give (folded_mib, taken as resident: the
// levels are outside the Go heap and written soon after they are mapped), the largest part of
// its memory known to grow with the attempts stored, in steps of a level. Each sample between
// two consecutive stats lines that give the filter the same size is taken less that size; a
// sample between two that differ (a level was added between them, at a time the lines do not
// tell) or outside the lines is left out, so that no step of the filter's is left in the
// series nor subtracted before it came. Its peak is its largest sample (there is no VmHWM of
// it). What an earlier call added is dropped first, so that judging a kept run again gives the
// same series, and on an error nothing of it is left.
func addLessFilter(rep *loadgen.Report, logPath string) error {
	isLess := func(name string) bool { return name == lessFilterName }
	dropSeries(rep, isLess)
	analyzer := analyzerIndex(rep)
	if analyzer < 0 {
		return fmt.Errorf("the analyzer's memory was not watched")
	}
	type size struct {
		at  time.Duration // since publishing began
		kib int64
	}
	var sizes []size
	err := eachStatsLine(logPath, foldedSize, func(at time.Time, field string) error {
		mib, err := strconv.ParseFloat(field, 64)
		sizes = append(sizes, size{at.Sub(rep.Began), int64(math.Round(mib * 1024))})
		return err
	})
	if err != nil {
		return err
	}
	if len(sizes) < 2 {
		return fmt.Errorf("%s has %d stats lines that give the filter's size (folded_mib), want two or more", logPath, len(sizes))
	}
	var peak int64
	kept := 0
	for i := range rep.Samples {
		s := &rep.Samples[i]
		rss, ok := s.RSS["analyzer"]
		if !ok {
			continue
		}
		j, _ := slices.BinarySearchFunc(sizes, s.At, func(z size, at time.Duration) int { return cmp.Compare(z.at, at) })
		// sizes[j] is the first line at or after the sample, sizes[j-1] the last before it.
		if j == 0 || j == len(sizes) || sizes[j-1].kib != sizes[j].kib {
			continue
		}
		v := rss - sizes[j].kib
		s.RSS[lessFilterName] = v
		peak = max(peak, v)
		kept++
	}
	if kept == 0 {
		dropSeries(rep, isLess)
		return fmt.Errorf("no sample of the analyzer's lies between two stats lines that give the filter the same size")
	}
	rep.Memory = append(rep.Memory, loadgen.Memory{Name: lessFilterName, PID: rep.Memory[analyzer].PID, PeakKiB: peak})
	return nil
}

// dropSeries removes from rep the watched processes, and their samples, whose names match: a
// series an earlier judging derived.
func dropSeries(rep *loadgen.Report, match func(name string) bool) {
	rep.Memory = slices.DeleteFunc(rep.Memory, func(m loadgen.Memory) bool { return match(m.Name) })
	for _, s := range rep.Samples {
		maps.DeleteFunc(s.RSS, func(name string, _ int64) bool { return match(name) })
	}
}

// analyzerIndex is the index of the analyzer's memory figures in rep.Memory, or -1 when it was
// not watched.
func analyzerIndex(rep *loadgen.Report) int {
	return slices.IndexFunc(rep.Memory, func(m loadgen.Memory) bool { return m.Name == "analyzer" && m.Err == "" })
}

// partPrefix begins the name of each part of the analyzer's memory judged as a process of its
// own in a load's report (addParts): analyzer/go, analyzer/duckdb, and so on.
const partPrefix = "analyzer/"

// memoryParts splits the analyzer's RSS into parts that do not overlap, each a figure of its
// stats lines (warehouse.Memory.Parts, with _mib): the rest, analyzer/rest, is the RSS less
// them. A part that grows while the others are flat is where the RSS grows.
var memoryParts = []struct{ name, field string }{
	{"go", "go_mapped"},           // the Go runtime's memory from the OS, not returned
	{"duckdb", "duckdb_resident"}, // DuckDB's allocator (jemalloc): its buffer pool and more
	{"malloc", "malloc_inuse"},    // glibc's heap in use: the Arrow records, C++ objects
	{"folded", "folded"},          // the filter of folded attempts
}

// wholeStatsLine matches the time and the rest of the analyzer's stats line.
var wholeStatsLine = regexp.MustCompile(`^time=(\S+) (.*\bmsg=ingest .*)$`)

// mibField matches a figure of the analyzer's stats line.
var mibField = regexp.MustCompile(`\b([a-z_]+)_mib=([0-9]+(?:\.[0-9]+)?)\b`)

// partLines counts the stats lines addParts used, and those it left out: without every part,
// or more than a second from every sample (before publishing, or after the last sample).
type partLines struct{ used, incomplete, outside int }

// addParts adds to rep, as processes named partPrefix and a part's name, the analyzer's memory
// part by part (memoryParts, and rest: the RSS less the parts) from its stats lines in logPath,
// one point a line: the parts and the RSS of a line were read together (within the time its
// query of DuckDB took: seconds behind a reattach), and they are put on the sample nearest the
// line's time, within a second, for the judge's windows. The parts are estimates of what is
// resident (jemalloc's resident pages, the Go runtime's mapped memory, glibc's heap in use), so
// rest takes up the error and can be negative. A line without every part or its RSS (a part it
// could not read; an older analyzer's line) is left out, as is one far from every sample. What
// an earlier call added is dropped first, and on an error nothing of it is left. Each part's
// peak is its largest sample.
func addParts(rep *loadgen.Report, logPath string) (partLines, error) {
	drop := func() { dropSeries(rep, func(name string) bool { return strings.HasPrefix(name, partPrefix) }) }
	drop()
	var lines partLines
	analyzer := analyzerIndex(rep)
	if analyzer < 0 {
		return lines, fmt.Errorf("the analyzer's memory was not watched")
	}
	if len(rep.Samples) == 0 {
		return lines, fmt.Errorf("the report has no samples")
	}
	var names []string
	for _, p := range memoryParts {
		names = append(names, p.name)
	}
	names = append(names, "rest")
	peaks := map[string]int64{}
	for _, n := range names {
		peaks[n] = math.MinInt64
	}
	err := eachStatsLine(logPath, wholeStatsLine, func(at time.Time, line string) error {
		fields := map[string]int64{}
		for _, f := range mibField.FindAllStringSubmatch(line, -1) {
			mib, err := strconv.ParseFloat(f[2], 64)
			if err != nil {
				return fmt.Errorf("%s_mib: %v", f[1], err)
			}
			fields[f[1]] = int64(math.Round(mib * 1024))
		}
		rss, ok := fields["rss"]
		values := map[string]int64{}
		rest := rss
		for _, p := range memoryParts {
			v, has := fields[p.field]
			ok = ok && has
			values[p.name] = v
			rest -= v
		}
		values["rest"] = rest
		if !ok {
			lines.incomplete++
			return nil
		}
		d := at.Sub(rep.Began)
		j, _ := slices.BinarySearchFunc(rep.Samples, d, func(s loadgen.Sample, at time.Duration) int { return cmp.Compare(s.At, at) })
		if j == len(rep.Samples) || (j > 0 && d-rep.Samples[j-1].At < rep.Samples[j].At-d) {
			j-- // the sample before is nearer
		}
		if absDuration(rep.Samples[j].At-d) > time.Second {
			lines.outside++
			return nil
		}
		s := &rep.Samples[j]
		if s.RSS == nil {
			s.RSS = map[string]int64{}
		}
		for _, name := range names {
			s.RSS[partPrefix+name] = values[name]
			peaks[name] = max(peaks[name], values[name])
		}
		lines.used++
		return nil
	})
	if err != nil {
		drop()
		return lines, err
	}
	if lines.used < 2 {
		drop()
		return lines, fmt.Errorf("%s has %d stats lines with every part (%s) and the RSS near a sample, want two or more", logPath, lines.used,
			strings.Join(partFields(), ", "))
	}
	for _, name := range names {
		rep.Memory = append(rep.Memory, loadgen.Memory{Name: partPrefix + name, PID: rep.Memory[analyzer].PID, PeakKiB: peaks[name]})
	}
	return lines, nil
}

// partFields names the stats line's figures addParts needs.
func partFields() []string {
	f := []string{"rss_mib"}
	for _, p := range memoryParts {
		f = append(f, p.field+"_mib")
	}
	return f
}

// absDuration is |d|.
func absDuration(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// statsSkew is how much earlier than the stats line before it a reattach may have come.
const statsSkew = 5 * time.Second

// statsLine matches the time and the reattach count of the analyzer's periodic ingest log line.
var statsLine = regexp.MustCompile(`^time=(\S+) .*\bmsg=ingest .*\breattaches=(\d+)`)

// reattachReleases reads the analyzer's stats lines in logPath and returns, for each pair of
// consecutive lines whose reattach count grew, the span between them, counted from began, and
// begun statsSkew earlier: a stats line is stamped after its counters are read and DuckDB is
// asked for its memory (cmd/analyzer's ingest), so a reattach counted in a line may have come
// shortly before the previous line's time.
func reattachReleases(logPath string, began time.Time) ([]loadgen.Release, error) {
	var out []loadgen.Release
	var prevAt time.Time
	prevCount := int64(-1)
	err := eachStatsLine(logPath, statsLine, func(at time.Time, field string) error {
		n, err := strconv.ParseInt(field, 10, 64)
		if err != nil {
			return err
		}
		switch {
		case prevCount < 0 && n > 0: // before the first line: since the analyzer began
			out = append(out, loadgen.Release{From: math.MinInt64 / 2, To: at.Sub(began)})
		case prevCount >= 0 && n > prevCount:
			out = append(out, loadgen.Release{From: prevAt.Sub(began) - statsSkew, To: at.Sub(began)})
		}
		prevAt, prevCount = at, n
		return nil
	})
	if err != nil {
		return nil, err
	}
	if prevCount < 0 {
		return nil, fmt.Errorf("%s has no stats line", logPath)
	}
	return out, nil
}

// eachStatsLine calls each, in order, with the time and the one field that re (the time as its
// first group, the field as its second) matches of each stats line of the analyzer's log at
// logPath. An unreadable time, or an error of each, is returned as the line's.
func eachStatsLine(logPath string, re *regexp.Regexp, each func(at time.Time, field string) error) error {
	raw, err := os.ReadFile(logPath)
	if err != nil {
		return err
	}
	for i, line := range strings.Split(string(raw), "\n") {
		m := re.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, m[1])
		if err == nil {
			err = each(at, m[2])
		}
		if err != nil {
			return fmt.Errorf("%s:%d: %v", logPath, i+1, err)
		}
	}
	return nil
}

// counterField is a counter of the analyzer's stats line (cmd/analyzer's ingest).
var counterField = regexp.MustCompile(`\b(events|rejected|duplicates|id_lookups|transactions|short_transactions|reattaches|restarts|fold_errors)=(\d+)`)
