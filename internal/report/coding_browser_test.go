package report_test

import (
	"bytes"
	"context"
	"html"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/browsertest"
	"github.com/dittolab/ditto/internal/coding/codingtest"
	"github.com/dittolab/ditto/internal/demo"
	"github.com/dittolab/ditto/internal/report"
	"github.com/dittolab/ditto/metrics"
)

// runChromium runs headless Chromium on a local file with extra flags and returns its stdout.
func runChromium(t *testing.T, bin, file string, flags ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir()}, flags...)
	cmd := exec.CommandContext(ctx, bin, append(args, "file://"+file)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", flags, err, stderr.String())
	}
	return stdout.Bytes()
}

var (
	tableRE = regexp.MustCompile(`(?s)<table>(.*?)</table>`)
	rowRE   = regexp.MustCompile(`(?s)<tr[^>]*>(.*?)</tr>`)
	cellRE  = regexp.MustCompile(`(?s)<t[dh][^>]*>(.*?)</t[dh]>`)
	tagRE   = regexp.MustCompile(`<[^>]+>`)
)

// domTables reads the tables of a DOM fragment as Chromium serialised it: each row's cells'
// text, header row first.
func domTables(fragment string) [][][]string {
	var out [][][]string
	for _, tm := range tableRE.FindAllStringSubmatch(fragment, -1) {
		var rows [][]string
		for _, rm := range rowRE.FindAllStringSubmatch(tm[1], -1) {
			var cells []string
			for _, cm := range cellRE.FindAllStringSubmatch(rm[1], -1) {
				cells = append(cells, strings.TrimSpace(html.UnescapeString(tagRE.ReplaceAllString(cm[1], ""))))
			}
			rows = append(rows, cells)
		}
		out = append(out, rows)
	}
	return out
}

// TestCodingSectionInChromium runs a coding study end to end (a user's module with a failing
// test, a scripted model that weakens the test first, with and without test protection, six
// paired runs each), opens its HTML report in headless Chromium and reads the Coding runs
// section from the page Chromium built: one row per cell with the runs, successes and
// test-degradation trap a user reads there (6/6 with protection, 0/6 and six trapped runs
// without), and the McNemar table's row for test protection (6 pairs, c = 6, exact p 0.0313,
// B higher), each cell as the report computed it. The page also renders to a screenshot that
// is far from blank.
func TestCodingSectionInChromium(t *testing.T) {
	bin := browsertest.Chromium(t)
	root := t.TempDir()
	spec, _ := codingtest.WriteStudy(t, root, 6)
	scale := 0.0
	res, err := demo.Run(context.Background(), demo.Config{DataDir: filepath.Join(root, "data"), Spec: spec, LatencyScale: &scale,
		Concurrency: 4, Permutations: 100, Models: codingtest.Models})
	if err != nil {
		t.Fatal(err)
	}
	rep := readReportJSON(t, res.Dir)
	if rep.Coding == nil {
		t.Fatal("report.json has no coding section")
	}
	dom := string(runChromium(t, bin, res.HTML, "--dump-dom"))
	start := strings.Index(dom, "<h2>Coding runs</h2>")
	if start < 0 {
		t.Fatalf("the page Chromium built has no Coding runs heading (%d bytes of DOM)", len(dom))
	}
	section := dom[start+len("<h2>Coding runs</h2>"):]
	if end := strings.Index(section, "<h2>"); end >= 0 {
		section = section[:end]
	}
	tables := domTables(section)
	if len(tables) != 2 {
		t.Fatalf("the Coding runs section shows %d tables, want 2 (cells, McNemar comparisons)", len(tables))
	}
	cells, comps := tables[0], tables[1]

	// Every figure shown is the report's, as its renderer formats it.
	for i, want := range []report.Table{rep.CodingCellTable(), rep.CodingComparisonTable()} {
		got := tables[i]
		if len(got) != len(want.Rows)+1 || !slices.Equal(got[0], want.Header) {
			t.Errorf("table %d shows header %q and %d rows; the report has %q and %d", i, got[0], len(got)-1, want.Header, len(want.Rows))
			continue
		}
		for j, row := range want.Rows {
			if !slices.Equal(got[j+1], row) {
				t.Errorf("table %d row %d shows %q, the report has %q", i, j, got[j+1], row)
			}
		}
	}

	// What a user reads there.
	col := func(header []string, name string) int {
		i := slices.Index(header, name)
		if i < 0 {
			t.Fatalf("no column %q in %q", name, header)
		}
		return i
	}
	h := cells[0]
	byCond := map[string][]string{}
	for _, r := range cells[1:] {
		byCond[r[col(h, "condition")]] = r
		if r[col(h, "task")] != "clamp-upper" || r[col(h, "model")] != codingtest.Model || r[col(h, "runs")] != "6" {
			t.Errorf("cell row %q: want task clamp-upper, model %s, 6 runs", r, codingtest.Model)
		}
	}
	if p := byCond["protected"]; p == nil || p[col(h, "success")] != "6/6" || p[col(h, "tests pass with test files changed")] != "0" ||
		p[col(h, "runs with protected attempts")] != "6" {
		t.Errorf("protected row %q: want 6/6 successes, no trapped run, 6 runs with a refused test edit", p)
	}
	if o := byCond["open"]; o == nil || o[col(h, "success")] != "0/6" || o[col(h, "tests pass with test files changed")] != "6" {
		t.Errorf("open row %q: want 0/6 successes and 6 runs whose tests passed with the test changed", o)
	}
	ch := comps[0]
	var prot []string
	for _, r := range comps[1:] {
		if strings.HasPrefix(r[col(ch, "factor (B: on, A: off)")], "test_protection") {
			prot = r
		}
	}
	if prot == nil || prot[col(ch, "pairs")] != "6" || prot[col(ch, "c (B ok, A not)")] != "6" || prot[col(ch, "b (A ok, B not)")] != "0" ||
		prot[col(ch, "test")] != metrics.TestMcNemar || prot[col(ch, "p")] != "0.0313" || prot[col(ch, "verdict")] != "B higher" {
		t.Errorf("McNemar row for test protection %q: want 6 pairs, b 0, c 6, exact McNemar p 0.0313, B higher", prot)
	}

	// And the page renders.
	shot := filepath.Join(t.TempDir(), "coding.png")
	runChromium(t, bin, res.HTML, "--screenshot="+shot, "--window-size=1400,1800")
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	b := img.Bounds()
	nonWhite, samples := 0, 0
	for y := b.Min.Y; y < b.Max.Y; y += 4 {
		for x := b.Min.X; x < b.Max.X; x += 4 {
			r, g, bl, _ := img.At(x, y).RGBA()
			samples++
			if r>>8 < 240 || g>>8 < 240 || bl>>8 < 240 {
				nonWhite++
			}
		}
	}
	if float64(nonWhite)/float64(samples) < 0.02 {
		t.Errorf("screenshot looks blank: %.1f%% non-white", 100*float64(nonWhite)/float64(samples))
	}
}
