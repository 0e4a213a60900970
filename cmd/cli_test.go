// Tests of the conventions ditto's three binaries keep on the command line, run as a user runs
// them: each binary is built once (the analyzer with cgo and DuckDB, the producer and the
// worker without cgo, as the Makefile builds them, with a version set the way the Makefile
// sets it) and executed; what is checked is what it prints and the status it exits with.
package cmd_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/dittolab/ditto/internal/cli/clitest"
)

const testVersion = "v0.0.0-clitest"

var (
	analyzer = &clitest.Binary{Pkg: "github.com/dittolab/ditto/cmd/analyzer", Tags: "duckdb_arrow", CGO: true, Version: testVersion}
	producer = &clitest.Binary{Pkg: "github.com/dittolab/ditto/cmd/producer", Version: testVersion}
	worker   = &clitest.Binary{Pkg: "github.com/dittolab/ditto/cmd/harness-worker", Version: testVersion}
	binaries = []*clitest.Binary{analyzer, producer, worker}
)

func TestMain(m *testing.M) {
	code := m.Run()
	for _, b := range binaries {
		b.Remove()
	}
	os.Exit(code)
}

const exitStatuses = "exit status: 0 done, 1 failed, 2 usage error"

// helps caches each binary's commands and their help (without DITTO_ variables).
var helps = map[*clitest.Binary]map[string]string{}

// commands returns the commands b's help lists, in its order.
func commands(t *testing.T, b *clitest.Binary) []string {
	t.Helper()
	res := b.Run(t, "", nil, "--help")
	_, list, ok := strings.Cut(res.Stdout, "\ncommands:\n")
	if res.Code != 0 || !ok {
		t.Fatalf("%s --help = %d, no command list:\n%s", b.Name(), res.Code, res.Output())
	}
	list, _, _ = strings.Cut(list, "\n\n")
	var names []string
	for _, line := range strings.Split(list, "\n") {
		name, _, _ := strings.Cut(strings.TrimSpace(line), "  ")
		names = append(names, name)
	}
	if len(names) < 2 {
		t.Fatalf("%s --help lists %q", b.Name(), names)
	}
	if helps[b] == nil {
		helps[b] = map[string]string{}
		for _, cmd := range names {
			helps[b][cmd] = commandHelp(t, b, cmd)
		}
	}
	return names
}

// commandHelp returns "b cmd --help" with env.
func commandHelp(t *testing.T, b *clitest.Binary, cmd string, env ...string) string {
	t.Helper()
	res := b.Run(t, "", env, append(strings.Fields(cmd), "--help")...)
	if res.Code != 0 {
		t.Fatalf("%s %s --help = %d:\n%s", b.Name(), cmd, res.Code, res.Output())
	}
	return res.Stdout
}

// flagHelp returns the two lines help gives the flag, or "".
func flagHelp(help, flag string) string {
	lines := strings.Split(help, "\n")
	for i, l := range lines {
		if (l == "  --"+flag || strings.HasPrefix(l, "  --"+flag+" ")) && i+1 < len(lines) {
			return l + "\n" + lines[i+1]
		}
	}
	return ""
}

func TestVersion(t *testing.T) {
	for _, b := range binaries {
		for _, arg := range []string{"--version", "version"} {
			res := b.Run(t, "", nil, arg)
			if want := b.Name() + " " + testVersion + " ("; res.Code != 0 || !strings.HasPrefix(res.Stdout, want) || !strings.Contains(res.Stdout, "go1.") {
				t.Errorf("%s %s = %d, %q; want 0 and %q…, the Go version", b.Name(), arg, res.Code, res.Output(), want)
			}
		}
	}
}

// TestExitStatuses: every binary documents its exit statuses, and keeps them: 0 done, 1
// failed, 2 for a wrong command line; every command's help and usage error name that command.
func TestExitStatuses(t *testing.T) {
	empty := t.TempDir()
	badSpec := filepath.Join(t.TempDir(), "spec.json")
	if err := os.WriteFile(badSpec, []byte(`{"name": "x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		b    *clitest.Binary
		args []string
		want int
	}{
		{analyzer, []string{"sql", "--local", "--data-dir", empty, "SELECT 1"}, 1}, // no database
		{producer, []string{"study", "validate", "builtin:small"}, 0},
		{producer, []string{"study", "validate", badSpec}, 1},
		{worker, []string{"sim-serve", "--addr", "127.0.0.1:0", "--personas", filepath.Join(empty, "none.json")}, 1},
	} {
		if res := tt.b.Run(t, "", nil, tt.args...); res.Code != tt.want {
			t.Errorf("%s %q = %d, want %d:\n%s", tt.b.Name(), tt.args, res.Code, tt.want, res.Output())
		}
	}
	for _, b := range binaries {
		name := b.Name()
		res := b.Run(t, "", nil)
		if res.Code != 2 || !strings.Contains(res.Stderr, "usage: "+name+" <command>") || !strings.Contains(res.Stderr, exitStatuses) {
			t.Errorf("%s alone = %d, want 2 and the help with the exit statuses on stderr:\n%s", name, res.Code, res.Output())
		}
		res = b.Run(t, "", nil, "--help")
		if res.Code != 0 || !strings.Contains(res.Stdout, exitStatuses) {
			t.Errorf("%s --help = %d, want 0 and the exit statuses:\n%s", name, res.Code, res.Output())
		}
		if res := b.Run(t, "", nil, "no-such-command"); res.Code != 2 {
			t.Errorf("%s no-such-command = %d, want 2", name, res.Code)
		}
		cmds := commands(t, b)
		for _, cmd := range cmds {
			help := helps[b][cmd]
			usage := "usage: " + name + " " + cmd + " "
			if !strings.HasPrefix(help, usage) || !strings.Contains(help, exitStatuses) {
				t.Errorf("%s %s --help does not start with %q or lacks the exit statuses:\n%s", name, cmd, usage, help)
			}
			res := b.Run(t, "", nil, append(strings.Fields(cmd), "--no-such-flag")...)
			if res.Code != 2 || !strings.Contains(res.Stderr, name+" "+cmd+": flag provided but not defined: -no-such-flag\n"+usage) {
				t.Errorf("%s %s --no-such-flag = %d, want 2, the error and the command's own usage line:\n%s", name, cmd, res.Code, res.Output())
			}
			for _, other := range cmds {
				if other != cmd && !strings.HasPrefix(other, cmd+" ") && strings.Contains(res.Stderr, "usage: "+name+" "+other+" ") {
					t.Errorf("%s %s's usage error shows the usage of %s:\n%s", name, cmd, other, res.Stderr)
				}
			}
		}
	}
}

// TestReportUsageNamesItself: analyzer report without --study used to print the usage of
// analyzer metrics.
func TestReportUsageNamesItself(t *testing.T) {
	res := analyzer.Run(t, "", nil, "report", "--data-dir", t.TempDir())
	if res.Code != 2 || !strings.Contains(res.Stderr, "analyzer report: --study is required") ||
		!strings.Contains(res.Stderr, "usage: analyzer report --study S") || strings.Contains(res.Stderr, "metrics") {
		t.Errorf("analyzer report without --study = %d:\n%s\nwant 2 and the usage of analyzer report alone", res.Code, res.Stderr)
	}
}

// flagEnv is every flag that takes its value from an environment variable; bin "" is every
// binary.
var flagEnv = []struct{ bin, flag, env string }{
	{"", "data-dir", "DITTO_DATA_DIR"},
	{"", "nats-url", "DITTO_NATS_URL"},
	{"", "nats-user", "DITTO_NATS_USER"},
	{"", "nats-password", "DITTO_NATS_PASSWORD"},
	{"", "nats-token", "DITTO_NATS_TOKEN"},
	{"", "nats-creds", "DITTO_NATS_CREDS"},
	{"", "nats-port", "DITTO_NATS_PORT"},
	{"", "replicas", "DITTO_REPLICAS"},
	{"", "duplicate-window", "DITTO_DUPLICATE_WINDOW"},
	{"analyzer", "url", "DITTO_ANALYZER_URL"},
	{"analyzer", "token", "DITTO_ANALYZER_TOKEN"},
	{"analyzer", "listen", "DITTO_ANALYZER_LISTEN"},
	{"analyzer", "webhook", "DITTO_WEBHOOK"},
	{"producer", "token", "DITTO_INGEST_TOKENS"},
	{"producer", "auth-file", "DITTO_INGEST_AUTH_FILE"},
	{"harness-worker", "worker-id", "DITTO_WORKER_ID"},
	{"", "key-envs", "DITTO_KEY_ENVS"},
	{"", "base-urls", "DITTO_BASE_URLS"},
}

// TestHelpShowsEnvironment: wherever a flag with an environment variable appears, its help
// names the variable (and its value when set, unless secret); and the variable is applied.
func TestHelpShowsEnvironment(t *testing.T) {
	seen := map[string]bool{}
	for _, b := range binaries {
		for _, cmd := range commands(t, b) {
			help := helps[b][cmd]
			for _, fe := range flagEnv {
				line := flagHelp(help, fe.flag)
				if line == "" || (fe.bin != "" && fe.bin != b.Name()) || (cmd == "demo" && fe.flag == "data-dir") {
					continue
				}
				seen[fe.env] = true
				if !strings.Contains(line, "[env "+fe.env) {
					t.Errorf("%s %s --help: --%s does not name %s:\n%s", b.Name(), cmd, fe.flag, fe.env, line)
				}
			}
		}
	}
	for _, fe := range flagEnv {
		if !seen[fe.env] {
			t.Errorf("no command has --%s with %s", fe.flag, fe.env)
		}
	}
	dir := t.TempDir()
	help := commandHelp(t, analyzer, "sql", "DITTO_DATA_DIR="+dir)
	if line := flagHelp(help, "data-dir"); !strings.Contains(line, `(default "ditto-data") [env DITTO_DATA_DIR="`+dir+`"]`) {
		t.Errorf("analyzer sql --help with DITTO_DATA_DIR set: %s", line)
	}
	res := analyzer.Run(t, "", []string{"DITTO_DATA_DIR=" + dir}, "sql", "--local", "SELECT 1")
	if res.Code != 1 || !strings.Contains(res.Stderr, "no database at "+filepath.Join(dir, "ditto.duckdb")) {
		t.Errorf("analyzer sql with DITTO_DATA_DIR=%s = %d, want 1 and no database there:\n%s", dir, res.Code, res.Output())
	}
	res = producer.Run(t, "", []string{"DITTO_REPLICAS=three"}, "summary")
	if res.Code != 2 || !strings.Contains(res.Stderr, `environment variable DITTO_REPLICAS="three" (for --replicas): not an integer`) {
		t.Errorf("producer summary with DITTO_REPLICAS=three = %d, want 2 and the variable named:\n%s", res.Code, res.Output())
	}
}

// TestOnlyCLIReadsTheEnvironment: a DITTO_ variable read anywhere but through internal/cli's
// flags would be missing from help. DITTO_WAREHOUSE_TRACE is a debugging switch, not a flag;
// DITTO_TOKEN is in events/client's example of an agent's code; DITTO_ARTIFACTS is where the
// browser tests' helper (internal/browsertest, imported by tests only) saves screenshots.
func TestOnlyCLIReadsTheEnvironment(t *testing.T) {
	read := regexp.MustCompile(`os\.(Getenv|LookupEnv)\("DITTO_\w+"`)
	allowed := []string{`os.Getenv("DITTO_WAREHOUSE_TRACE"`, `os.Getenv("DITTO_TOKEN"`, `os.Getenv("DITTO_ARTIFACTS"`}
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && path != ".." && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range read.FindAllString(string(src), -1) {
			if !slices.Contains(allowed, m) {
				t.Errorf("%s reads %s…): define the flag with internal/cli instead", path, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// secretFlags is every flag that holds a secret or names a file of secrets; bin "" is every
// binary. kind says what is given: the secret itself ("value"), a token list entry
// SECRET=studies ("list"), a URL with the secret as its password ("url"), or the path of a
// file holding it ("file").
var secretFlags = []struct{ bin, flag, env, kind string }{
	{"", "nats-password", "DITTO_NATS_PASSWORD", "value"},
	{"", "nats-token", "DITTO_NATS_TOKEN", "value"},
	{"", "nats-url", "DITTO_NATS_URL", "url"},
	{"", "nats-creds", "DITTO_NATS_CREDS", "file"},
	{"", "tls-key", "", "file"},
	{"analyzer", "token", "DITTO_ANALYZER_TOKEN", "value"},
	{"analyzer", "url", "DITTO_ANALYZER_URL", "url"},
	{"analyzer", "webhook", "DITTO_WEBHOOK", "value"},
	{"producer", "token", "DITTO_INGEST_TOKENS", "list"},
	{"producer", "auth-file", "DITTO_INGEST_AUTH_FILE", "file"},
}

// TestSecretsNeverShown, one subtest per secret-bearing flag: on every command that has the
// flag, neither --help nor a usage error (nor, for URLs, a failed connection) prints the
// secret, whether it comes from the environment or the command line; help says whether the
// variable is set.
func TestSecretsNeverShown(t *testing.T) {
	for _, sf := range secretFlags {
		t.Run(sf.flag+"/"+sf.env, func(t *testing.T) {
			secret := "S3cr3t-" + sf.flag + "-q8Zx0"
			give := secret
			switch sf.kind {
			case "list":
				give = secret + "=*"
			case "url":
				give = "nats://ditto:" + secret + "@127.0.0.1:1"
				if sf.flag == "url" {
					give = "http://ditto:" + secret + "@127.0.0.1:1"
				}
			case "file":
				give = filepath.Join(t.TempDir(), "secret")
				if err := os.WriteFile(give, []byte(secret+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			check := func(b *clitest.Binary, env []string, args []string, wantCode int) clitest.Result {
				t.Helper()
				res := b.Run(t, t.TempDir(), env, args...)
				if res.Code != wantCode {
					t.Errorf("%s %q = %d, want %d:\n%s", b.Name(), args, res.Code, wantCode, res.Output())
				}
				if strings.Contains(res.Output(), secret) {
					t.Errorf("%s %q with %s printed the secret:\n%s", b.Name(), args, strings.Join(env, " "), res.Output())
				}
				return res
			}
			// The variable and the flag are both given (the flag wins): one run shows
			// neither is printed, which keeps this test's hundreds of runs in check.
			var env []string
			if sf.env != "" {
				env = []string{sf.env + "=" + give}
			}
			found := 0
			for _, b := range binaries {
				if sf.bin != "" && sf.bin != b.Name() {
					continue
				}
				for _, cmd := range commands(t, b) {
					if flagHelp(helps[b][cmd], sf.flag) == "" {
						continue
					}
					found++
					words := strings.Fields(cmd)
					res := check(b, env, append(slices.Clone(words), "--"+sf.flag, give, "--help"), 0)
					line := flagHelp(res.Stdout, sf.flag)
					switch {
					case sf.env != "" && (sf.kind == "value" || sf.kind == "list"):
						if !strings.Contains(line, "[env "+sf.env+": set, value not shown]") {
							t.Errorf("%s %s --help with %s set: %s", b.Name(), cmd, sf.env, line)
						}
					case sf.env != "" && sf.kind == "url":
						if !strings.Contains(line, "xxxxx@127.0.0.1:1") {
							t.Errorf("%s %s --help with %s set: %s", b.Name(), cmd, sf.env, line)
						}
					}
					check(b, env, append(slices.Clone(words), "--"+sf.flag, give, "--no-such-flag"), 2)
				}
			}
			if found == 0 {
				t.Fatalf("no command has --%s", sf.flag)
			}
			// Values refused, and a connection that fails, with the secret in them.
			switch sf.flag {
			case "nats-url":
				check(producer, nil, []string{"summary", "--nats-url", "nats://ditto:" + secret + "@"}, 2)
				check(producer, []string{"DITTO_NATS_URL=nats://ditto:" + secret + "@"}, []string{"summary"}, 2)
				check(producer, nil, []string{"summary", "--nats-url", give}, 1)
			case "url":
				check(analyzer, nil, []string{"sql", "--url", give, "SELECT 1"}, 1)
			case "webhook":
				check(analyzer, nil, []string{"serve", "--report-schedule", "@hourly", "--webhook", "ftp://" + secret}, 2)
				check(analyzer, []string{"DITTO_WEBHOOK=" + secret}, []string{"serve", "--report-schedule", "@hourly"}, 2)
			case "token":
				if sf.bin == "producer" {
					check(producer, nil, []string{"serve", "--token", secret}, 2) // no =studies
					check(producer, []string{"DITTO_INGEST_TOKENS=" + secret}, []string{"serve"}, 2)
				}
			}
		})
	}
}

// TestDataDirAnywhere: --data-dir (like every flag) is accepted before or after positional
// arguments; study submit SPEC --data-dir X used to fail with a bare usage line.
func TestDataDirAnywhere(t *testing.T) {
	dir := t.TempDir()
	res := producer.Run(t, "", nil, "study", "submit", "builtin:small", "--data-dir", dir, "--nats-port", "-1")
	if res.Code != 0 || !strings.Contains(res.Stdout, "submitted study small") {
		t.Fatalf("producer study submit builtin:small --data-dir DIR = %d:\n%s", res.Code, res.Output())
	}
	if _, err := os.Stat(filepath.Join(dir, "jetstream")); err != nil {
		t.Errorf("the study was not stored under --data-dir: %v", err)
	}
	res = producer.Run(t, "", nil, "study", "status", "small", "--nats-port", "-1", "--data-dir", dir)
	if res.Code != 0 || !strings.Contains(res.Stdout, "0/54 runs finished") {
		t.Errorf("producer study status small --data-dir DIR = %d:\n%s", res.Code, res.Output())
	}
	res = analyzer.Run(t, "", nil, "ingest", "--once", "--stats-every", "0", "--nats-port", "-1", "--data-dir", dir)
	if res.Code != 0 {
		t.Fatalf("analyzer ingest --once --data-dir DIR = %d:\n%s", res.Code, res.Output())
	}
	res = analyzer.Run(t, "", nil, "sql", "SELECT count(*) AS studies FROM studies", "--format", "csv", "--local", "--data-dir", dir)
	if res.Code != 0 || res.Stdout != "studies\n1\n" {
		t.Errorf("analyzer sql QUERY --data-dir DIR = %d:\n%s", res.Code, res.Output())
	}
}

// TestDemoRefusesForeignDirectory: analyzer demo used to empty --data-dir, whatever it held.
func TestDemoRefusesForeignDirectory(t *testing.T) {
	dir := t.TempDir()
	notes := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notes, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, extra := range [][]string{nil, {"--keep"}} {
		args := append([]string{"demo", "--data-dir", dir, "--n", "1", "--latency-scale", "0"}, extra...)
		res := analyzer.Run(t, "", nil, args...)
		if res.Code != 2 || !strings.Contains(res.Stderr, "give --data-dir a new or empty directory") {
			t.Errorf("analyzer %q on a directory holding notes.txt = %d, want 2 and what to do:\n%s", args, res.Code, res.Output())
		}
		if b, err := os.ReadFile(notes); err != nil || string(b) != "mine" {
			t.Fatalf("notes.txt after analyzer %q: %q, %v", args, b, err)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 1 {
			t.Errorf("analyzer %q added to the directory: %d entries", args, len(ents))
		}
	}
}

// TestCLIDocEnvironment: docs/cli.md's table names every environment variable a flag reads.
// (Its reference part, each binary's help, is checked by TestHelpReference in each cmd
// package.)
func TestCLIDocEnvironment(t *testing.T) {
	raw, err := os.ReadFile("../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, fe := range flagEnv {
		if !strings.Contains(string(raw), "| `"+fe.env+"` | `--"+fe.flag+"`") {
			t.Errorf("docs/cli.md: the table of environment variables lacks %s (--%s)", fe.env, fe.flag)
		}
	}
}
