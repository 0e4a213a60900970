package cmd_test

import (
	"bufio"
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// readmeBlock is a fenced block of a quick-start document marked for the README check by the
// comment line before it: "<!-- readme-check: NAME -->" runs a sh block, "<!-- readme-check: file
// NAME -->" writes the block to the file NAME (before any block runs).
type readmeBlock struct {
	name string
	file bool
	lang string
	doc  string // the document holding it, relative to the module root
	line int
	body string
}

// quickStartDocs are the documents whose marked blocks the README check runs, in this order: the
// README, and the docs holding files its quick starts use (the README links them).
var quickStartDocs = []string{"README.md", "docs/production.md"}

var readmeMarker = regexp.MustCompile(`^<!-- readme-check: (file )?([A-Za-z0-9_.-]+) -->$`)

// readmeBlocks returns the marked blocks of doc (relative to the module root), in order.
func readmeBlocks(t *testing.T, doc string) []readmeBlock {
	t.Helper()
	f, err := os.Open(filepath.Join("..", doc))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		blocks []readmeBlock
		cur    *readmeBlock
		marked *readmeBlock
	)
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur != nil && line == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.body += line + "\n"
		case marked != nil && strings.HasPrefix(line, "```"):
			marked.lang, marked.line = strings.TrimPrefix(line, "```"), n
			cur, marked = marked, nil
		case marked != nil:
			t.Fatalf("%s:%d: the line after the readme-check marker %q is not a code fence", doc, n, marked.name)
		default:
			if m := readmeMarker.FindStringSubmatch(line); m != nil {
				marked = &readmeBlock{name: m[2], file: m[1] != "", doc: doc}
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur != nil || marked != nil {
		t.Fatalf("%s ends inside a readme-check block", doc)
	}
	return blocks
}

// The ports the README names, replaced in the blocks by free ones so that the check neither
// needs them free nor disturbs what listens on them.
var readmePorts = []string{"4222", "8470", "4318", "4317"}

// TestReadmeQuickStarts runs the marked blocks of the quick-start documents in order, as a
// newcomer following the README would, in one empty directory holding bin/ (the binaries as make build builds them; the
// blocks' `make build` is that build): each sh block in its own bash with -euo pipefail, on
// free ports (the README's 127.0.0.1:PORT replaced, DITTO_NATS_PORT and DITTO_ANALYZER_LISTEN
// set). A block that fails fails the test, and so do
// the production block's answers if an event was refused.
func TestReadmeQuickStarts(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the README's quick starts (a study of 54 runs, servers)")
	}
	var blocks []readmeBlock
	for _, doc := range quickStartDocs {
		blocks = append(blocks, readmeBlocks(t, doc)...)
	}
	if n := countRuns(blocks); n < 4 {
		t.Fatalf("the quick-start documents have %d readme-check sh blocks, want the study, production, sql and schedule quick starts", n)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, b := range binaries {
		if err := os.Symlink(b.Path(t), filepath.Join(bin, b.Name())); err != nil {
			t.Fatal(err)
		}
	}
	ports := map[string]string{}
	taken := map[int]bool{}
	for _, p := range readmePorts {
		port := freePort(t)
		for taken[port] {
			port = freePort(t)
		}
		taken[port] = true
		ports[p] = strconv.Itoa(port)
	}
	// Files first: a block may use a file shown after it, or in a doc the README links.
	var runs []readmeBlock
	for _, b := range blocks {
		for from, to := range ports {
			b.body = strings.ReplaceAll(b.body, "127.0.0.1:"+from, "127.0.0.1:"+to)
		}
		if !b.file {
			runs = append(runs, b)
		} else if err := os.WriteFile(filepath.Join(dir, b.name), []byte(b.body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range runs {
		body := b.body
		if b.lang != "sh" {
			t.Fatalf("%s:%d: readme-check block %q is %q, want sh", b.doc, b.line, b.name, b.lang)
		}
		if strings.Contains(body, "python3") {
			requireTool(t, "python3")
		}
		requireTool(t, "curl")
		out := runReadmeBlock(t, dir, b, body, ports)
		if b.name == "production" {
			for _, want := range []string{`{"accepted":5,"rejected":[]}`, `{"accepted":3,"rejected":[]}`} {
				if !strings.Contains(out, want) {
					t.Errorf("README block production: the answers lack %s:\n%s", want, out)
				}
			}
		}
	}
}

func countRuns(blocks []readmeBlock) int {
	n := 0
	for _, b := range blocks {
		if !b.file {
			n++
		}
	}
	return n
}

// runReadmeBlock runs one block in dir and returns its output; it fails the test if the block
// fails or outlives its deadline. Whatever the block left running is killed with its process
// group.
func runReadmeBlock(t *testing.T, dir string, b readmeBlock, body string, ports map[string]string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// make build: the binaries in bin/ are that build.
	script := "set -euo pipefail\nmake() { [ \"$*\" = build ] || { echo \"readme check: only make build is provided\" >&2; return 1; }; }\n" + body
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(readmeEnv(), "DITTO_NATS_PORT="+ports["4222"], "DITTO_ANALYZER_LISTEN=127.0.0.1:"+ports["8470"])
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	if err != nil || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("%s:%d: block %q failed after %v: %v\n%s", b.doc, b.line, b.name, time.Since(start).Round(time.Second), err, out)
	}
	t.Logf("README block %q: %v", b.name, time.Since(start).Round(time.Second))
	return string(out)
}

// readmeEnv is the test's environment without ditto's variables, which would change what the
// README's commands do.
func readmeEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DITTO_") && !strings.HasPrefix(kv, "OTEL_") {
			env = append(env, kv)
		}
	}
	return env
}

func requireTool(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is needed by the README's quick starts (CI installs it)", name)
		}
		t.Skipf("%s not installed: the README's quick starts need it", name)
	}
}

// freePort returns a port free now, taken below Linux's ephemeral range (32768-60999) and
// away from the fixed ports of the local cluster and the fault suite (14221-18223, 24221-28223).
// The README's blocks run one after another for minutes: a port of the ephemeral range, free
// when chosen, could meanwhile be given to any outgoing connection or to another test's
// listener on port 0 (the production block once failed with "address already in use" that way).
func freePort(t *testing.T) int {
	t.Helper()
	for range 200 {
		port := 20000 + rand.IntN(4000)
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		ln.Close()
		return port
	}
	t.Fatal("no free port in 20000-23999")
	return 0
}

// TestReadmeLayout fails when a package of the module (go list ./...) has no row in the layout
// table of docs/layout.md, a row names a package that does not exist, or the README no longer
// links the table.
func TestReadmeLayout(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "](docs/layout.md)") {
		t.Error("README.md does not link docs/layout.md, the table of every package")
	}
	layout, err := os.ReadFile("../docs/layout.md")
	if err != nil {
		t.Fatal(err)
	}
	table := string(layout)
	rows := map[string]bool{}
	// A row's first cell names one package or several (`a`, `b`), its second says their role.
	for _, m := range regexp.MustCompile("(?m)^\\| (`[^|]+`) \\| \\S").FindAllStringSubmatch(table, -1) {
		for _, name := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(m[1], -1) {
			rows[strings.TrimSuffix(name[1], "/")] = true
		}
	}
	list := exec.Command("go", "list", "-tags", "duckdb_arrow", "./...")
	list.Dir = ".." // the module root
	out, err := list.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const module = "github.com/dittolab/ditto/"
	for _, pkg := range strings.Fields(string(out)) {
		rel := strings.TrimPrefix(pkg, module)
		if rel == pkg {
			t.Errorf("package %s: outside the module %s?", pkg, module)
			continue
		}
		if !rows[rel] {
			t.Errorf("docs/layout.md has no row for the package %s: add `| `%s` | its one-line role |`", rel, rel)
		}
		delete(rows, rel)
	}
	for rel := range rows {
		t.Errorf("docs/layout.md names %s, which is not a package of the module", rel)
	}
}

// TestDocLinks fails when a relative link of README.md or docs/*.md names a file that does not
// exist (a doc moved or renamed without its links).
func TestDocLinks(t *testing.T) {
	docs, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	link := regexp.MustCompile(`\]\(([^)#\s]+)(#[^)]*)?\)`)
	for _, doc := range append(docs, "../README.md", "../deploy/README.md") {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(doc), target)); err != nil {
				t.Errorf("%s links to %s, which does not exist", strings.TrimPrefix(doc, "../"), target)
			}
		}
	}
}
