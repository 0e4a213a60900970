package queryapi

import (
	"context"
	"database/sql"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/sqlguard"
	"github.com/dittolab/ditto/internal/sqlguard/sqlguardtest"
)

// recipeServer serves a database shaped like the projection's runs and studies (the columns
// the recipes use), 1,000 runs in 3 studies, behind a token.
func recipeServer(t *testing.T) *httptest.Server {
	t.Helper()
	db, err := sql.Open("duckdb", filepath.Join(t.TempDir(), "ditto.duckdb"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, s := range []string{
		`CREATE TABLE runs AS SELECT 's' || (i % 3) AS study, printf('r%04d', i) AS run,
			CASE WHEN i % 10 = 0 THEN 'failed' ELSE 'succeeded' END AS status, (1000 + i * 7)::BIGINT AS tokens,
			TIMESTAMPTZ '2026-11-30 08:00:00+00' + INTERVAL (i) SECOND AS started_at,
			CASE WHEN i % 4 = 0 THEN ['search'] ELSE ['search', 'fetch', 'summarize'] END AS tools
		 FROM range(1000) t(i)`,
		`CREATE VIEW studies AS SELECT study, count(*) AS finished_runs, 400::BIGINT AS expected_runs FROM runs GROUP BY study`,
	} {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	if err := sqlguard.Harden(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	s, err := NewServer(db, Config{Token: testToken, Limits: sqlguard.Config{Timeout: 30 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	return newHTTPServer(t, s)
}

// recipe is a fenced block of docs/query-api.md whose info string ends in "recipe".
type recipe struct {
	lang, code string
	line       int
}

var recipeFence = regexp.MustCompile("(?m)^```(\\w+) recipe\\n")

func readRecipes(t *testing.T) []recipe {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "query-api.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	var out []recipe
	for _, m := range recipeFence.FindAllStringSubmatchIndex(doc, -1) {
		end := strings.Index(doc[m[1]:], "\n```")
		if end < 0 {
			t.Fatalf("docs/query-api.md: recipe at byte %d has no closing fence", m[0])
		}
		out = append(out, recipe{lang: doc[m[2]:m[3]], code: doc[m[1] : m[1]+end+1],
			line: strings.Count(doc[:m[0]], "\n") + 1})
	}
	return out
}

// pythonWithPandas returns a Python interpreter that imports pandas, or "".
func pythonWithPandas() string {
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(py, "-c", "import pandas").Run() == nil {
			return py
		}
	}
	return ""
}

// TestRecipes runs every recipe of docs/query-api.md against a served database: each must
// exit 0 and print something.
func TestRecipes(t *testing.T) {
	sqlguardtest.NeedsQueries(t)
	recipes := readRecipes(t)
	if len(recipes) < 8 {
		t.Fatalf("docs/query-api.md has %d recipes, want at least 8", len(recipes))
	}
	ts := recipeServer(t)
	for _, r := range recipes {
		t.Run(fmt.Sprintf("%s_line_%d", r.lang, r.line), func(t *testing.T) {
			dir := t.TempDir()
			var cmd *exec.Cmd
			switch r.lang {
			case "sh":
				for _, tool := range []string{"curl", "jq"} {
					if strings.Contains(r.code, tool) {
						if _, err := exec.LookPath(tool); err != nil {
							missingTool(t, "%s is not installed", tool)
						}
					}
				}
				cmd = exec.Command("bash", "-euo", "pipefail", "-c", r.code)
			case "python":
				py := pythonWithPandas()
				if py == "" {
					missingTool(t, "no python3 with pandas (Debian: apt-get install python3-pandas)")
				}
				cmd = exec.Command(py, "-c", r.code)
			case "js":
				var nodeDir string
				switch {
				case strings.Contains(r.code, "'@duckdb/node-api'"):
					nodeDir = nodeDuckDB(t)
				case strings.Contains(r.code, "'apache-arrow'"):
					nodeDir = nodePackage(t, "apache-arrow", nodeArrowVersion)
				default:
					t.Fatalf("line %d: a js recipe importing neither @duckdb/node-api nor apache-arrow", r.line)
				}
				script := filepath.Join(nodeDir, "recipe-"+filepath.Base(dir)+".mjs")
				if err := os.WriteFile(script, []byte(r.code), 0o644); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { os.Remove(script) })
				cmd = exec.Command("node", script)
			default:
				t.Fatalf("line %d: no runner for %s recipes", r.line, r.lang)
			}
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "DITTO_URL="+ts.URL, "DITTO_TOKEN="+testToken)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("docs/query-api.md line %d: %v\n%s", r.line, err, out)
			}
			if len(strings.TrimSpace(string(out))) == 0 {
				t.Errorf("docs/query-api.md line %d printed nothing", r.line)
			}
			t.Logf("line %d:\n%s", r.line, out)
		})
	}
}

// TestGoRecipeIsTheExample: the Go recipe of the docs is ExampleClient_Query's code.
func TestGoRecipeIsTheExample(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "query-api.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```go\\n(.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/query-api.md has no go block")
	}
	ex, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	indented := "\t" + strings.ReplaceAll(strings.TrimSuffix(string(m[1]), "\n"), "\n", "\n\t")
	if !strings.Contains(string(ex), indented) {
		t.Errorf("example_test.go does not hold the go block of docs/query-api.md:\n%s", indented)
	}
}

// pandasScript reads the JSON, JSONL and CSV answers of a 1,000-row query (NULLs in text,
// integer and float columns, a timestamp with zone) and asserts one DataFrame; then reads an
// integer above 2^53 through each and asserts it exact.
const pandasScript = `
import sys, urllib.parse
import pandas as pd
base, token = sys.argv[1], sys.argv[2]
auth = {"Authorization": "Bearer " + token}
def url(q, fmt):
    return base + "/v1/sql?" + urllib.parse.urlencode({"q": q, "format": fmt, "limit": 100000})
q = """SELECT i AS id, 'study-' || (i % 7) AS study, i * 0.25 AS score, i % 2 = 0 AS ok,
    CASE WHEN i % 10 = 0 THEN NULL ELSE 'note ' || i END AS note,
    CASE WHEN i % 3 = 0 THEN NULL ELSE i * 1000 END AS tokens,
    CASE WHEN i % 5 = 0 THEN NULL ELSE i / 8 END AS ratio,
    TIMESTAMPTZ '2026-01-01 00:00:00+00' + INTERVAL (i) SECOND AS started_at
    FROM range(1000) t(i) ORDER BY i"""
a = pd.read_json(url(q, "json"), convert_dates=["started_at"], storage_options=auth)
b = pd.read_json(url(q, "jsonl"), lines=True, convert_dates=["started_at"], storage_options=auth)
c = pd.read_csv(url(q, "csv"), parse_dates=["started_at"], storage_options=auth)
assert len(a) == 1000, len(a)
pd.testing.assert_frame_equal(a, b)
pd.testing.assert_frame_equal(a, c)
big = "SELECT 9007199254740993::BIGINT AS big UNION ALL SELECT -9007199254740993"
for fmt, frame in [
    ("json", pd.read_json(url(big, "json"), dtype={"big": "int64"}, storage_options=auth)),
    ("jsonl", pd.read_json(url(big, "jsonl"), lines=True, dtype={"big": "int64"}, storage_options=auth)),
    ("csv", pd.read_csv(url(big, "csv"), storage_options=auth)),
]:
    got = [int(v) for v in frame["big"]]
    assert got == [9007199254740993, -9007199254740993], (fmt, got)
print("same DataFrame from json, jsonl and csv:", a.shape, dict(a.dtypes.astype(str)))
`

// TestPandasAcceptance is the acceptance test "pandas reads the JSON, JSONL and CSV answers of
// a 1,000-row query into the same DataFrame", with an int64 above 2^53 exact through each.
func TestPandasAcceptance(t *testing.T) {
	sqlguardtest.NeedsQueries(t)
	py := pythonWithPandas()
	if py == "" {
		missingTool(t, "no python3 with pandas (Debian: apt-get install python3-pandas)")
	}
	ts := recipeServer(t)
	out, err := exec.Command(py, "-c", pandasScript, ts.URL, testToken).CombinedOutput()
	if err != nil {
		t.Fatalf("pandas: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
