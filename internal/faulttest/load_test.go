package faulttest

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/loadgen"
)

// loadRow is one line of the load session's summary.
type loadRow struct {
	mode        string
	rate        float64
	rep         loadgen.Report
	stored      int64 // events of the study in DuckDB at the end
	benchRate   float64
	benchErr    string
	sustained   bool
	memAnalyzer int64 // KiB
	memNATS     []int64
	memProducer int64
}

// TestLoad is the sustained-load session of `make load`: for each mode (embedded: the analyzer
// hosts the embedded server, one process; cluster: three nats-server processes, R3 streams,
// sync_interval always) and each rate, `producer load` publishes for the duration while the
// analyzer ingests; then `nats bench js pub async` measures raw JetStream publishing with the
// same settings (file storage, replicas, dedup, the mean event size) on the same server.
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
	fmt.Printf("\nLOAD SUMMARY (duration %s; rates in events/s; memory = peak RSS, VmHWM)\n", dur)
	fmt.Printf("%-9s %7s %9s %9s %8s %8s %9s %6s %9s %10s %9s %9s %10s %6s\n", "mode", "target", "published", "end2end", "drain",
		"max-lag", "lag-slope", "held", "stored", "analyzer", "nats", "producer", "nats-bench", "ratio")
	for _, r := range rows {
		var nats []string
		for _, m := range r.memNATS {
			nats = append(nats, fmt.Sprintf("%.0f", float64(m)/1024))
		}
		natsCol := strings.Join(nats, "/") + "M"
		if len(nats) == 0 {
			natsCol = "(analyzer)"
		}
		ratio := "-"
		if r.benchRate > 0 {
			ratio = fmt.Sprintf("%.3f", r.rep.EndToEndRate/r.benchRate)
		}
		fmt.Printf("%-9s %7.0f %9.0f %9.0f %8s %8d %+9.1f %6v %9d %9.0fM %9s %8.0fM %10.0f %6s\n", r.mode, r.rate, r.rep.PublishRate,
			r.rep.EndToEndRate, r.rep.Drain.Round(10*time.Millisecond), r.rep.MaxLag, r.rep.LagSlope, r.sustained, r.stored,
			float64(r.memAnalyzer)/1024, natsCol, float64(r.memProducer)/1024, r.benchRate, ratio)
		if r.benchErr != "" {
			fmt.Printf("  nats bench: %s\n", r.benchErr)
		}
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func loadOnce(t *testing.T, b *bins, mode string, rate float64, dur time.Duration) loadRow {
	dir := t.TempDir()
	db := filepath.Join(dir, "ditto.duckdb")
	row := loadRow{mode: mode, rate: rate}
	var url string
	var env []string
	replicas := 1
	watch := map[string]int{}
	var analyzer *proc
	var c *cluster
	// Extra analyzer flags, e.g. "--duckdb-memory 512MB" (make load ANALYZER_FLAGS=...).
	extra := strings.Fields(os.Getenv("DITTO_LOAD_ANALYZER_FLAGS"))
	switch mode {
	case "embedded":
		// The embedded default: the analyzer's process hosts nats-server (file store, the
		// server's default sync interval) and ingests; nothing else runs but the load.
		port := freePort(t)
		analyzer = start(t, dir, "analyzer", b.analyzer, nil, append([]string{"ingest", "--data-dir", dir, "--db", db,
			"--nats-port", fmt.Sprint(port), "--stats-every", "5s"}, extra...)...)
		url = fmt.Sprintf("nats://127.0.0.1:%d", port)
		poll(t, 60*time.Second, "the analyzer hosting NATS", func() (bool, error) {
			raw, err := os.ReadFile(filepath.Join(dir, "nats.url"))
			return err == nil && strings.TrimSpace(string(raw)) == url, err
		})
	case "cluster":
		c = startCluster(t, b, dir, envOr("DITTO_LOAD_SYNC", "always"))
		defer c.stop()
		url, replicas = c.URLs(), 3
		env = []string{"DITTO_REPLICAS=3"}
		analyzer = startReady(t, dir, "analyzer", b.analyzer, env, "msg=ingesting", append([]string{"ingest", "--nats-url", url,
			"--data-dir", dir, "--db", db, "--stats-every", "5s"}, extra...)...)
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
	load := start(t, dir, "load", b.producer, env, "load", "--nats-url", url, "--study", study,
		"--rate", fmt.Sprint(rate), "--duration", dur.String(), "--json", report,
		"--drain-timeout", max(time.Minute, dur).String(), "--watch", strings.Join(ws, ","))
	lerr := load.wait(dur + max(time.Minute, dur) + time.Minute)
	fmt.Print(load.tail())
	raw, err := os.ReadFile(report)
	if err != nil {
		t.Fatalf("no load report (%v): %v\n%s", lerr, err, load.tail())
	}
	if err := json.Unmarshal(raw, &row.rep); err != nil {
		t.Fatal(err)
	}
	row.sustained = row.rep.Sustained()
	for _, m := range row.rep.Memory {
		switch {
		case m.Name == "analyzer":
			row.memAnalyzer = m.PeakKiB
		case m.Name == "producer":
			row.memProducer = m.PeakKiB
		case strings.HasPrefix(m.Name, "nats-"):
			row.memNATS = append(row.memNATS, m.PeakKiB)
		}
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
	cnt := dbCounts(t, db, study)
	row.stored = cnt.Events
	if want := int64(row.rep.Published - row.rep.Failed); cnt.Events != want || cnt.DupIDs != 0 {
		t.Errorf("DuckDB holds %d events of %s (%d duplicate ids), want %d", cnt.Events, study, cnt.DupIDs, want)
	}
	return row
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
