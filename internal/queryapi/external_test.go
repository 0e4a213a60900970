package queryapi

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/sqlguard/sqlguardtest"
)

// nodeDuckDBVersion and nodeArrowVersion pin the npm packages used as independent readers of
// exports and answers.
const (
	nodeDuckDBVersion = "1.5.6-r.1"
	nodeArrowVersion  = "21.2.0"
)

// nodeDuckDB installs @duckdb/node-api from npm (see nodePackage).
func nodeDuckDB(t *testing.T) string {
	return nodePackage(t, "@duckdb/node-api", nodeDuckDBVersion)
}

// nodePackage installs an npm package into a cache directory (once per machine and version)
// and returns the directory to run node in. It skips the test, saying why, when node, npm or
// the registry are not there, except under CI=true, where that fails it.
func nodePackage(t *testing.T, pkg, version string) string {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short: this test installs %s from npm", pkg)
	}
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			missingTool(t, "%s is not installed: no external reader", tool)
		}
	}
	dir := filepath.Join(os.TempDir(), "ditto-test-node-"+strings.NewReplacer("@", "", "/", "-").Replace(pkg)+"-"+version)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg, "package.json")); err == nil {
		return dir
	}
	tmp, err := os.MkdirTemp(os.TempDir(), "ditto-test-node-*")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--loglevel=error",
		"--prefix", tmp, pkg+"@"+version)
	out, err := cmd.CombinedOutput()
	if err != nil {
		os.RemoveAll(tmp)
		missingTool(t, "npm install %s@%s failed (is the npm registry reachable?): %v\n%s", pkg, version, err, out)
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another test process won the race; use its copy.
		os.RemoveAll(tmp)
	}
	return dir
}

// nodeCountScript counts the rows of every table of an export with DuckDB's Node package,
// from the files alone: it is given only the directory and lists it itself.
const nodeCountScript = `
import { DuckDBInstance } from '@duckdb/node-api';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
const dir = process.argv[2];
const inst = await DuckDBInstance.create(':memory:');
const con = await inst.connect();
const out = {};
for (const name of readdirSync(dir)) {
  const p = join(dir, name);
  let src, table;
  if (statSync(p).isDirectory()) {
    src = "read_parquet('" + join(p, '*', '*.parquet') + "', hive_partitioning = true)";
    table = name;
  } else if (name.endsWith('.parquet')) {
    src = "read_parquet('" + p + "')";
    table = name.slice(0, -'.parquet'.length);
  } else continue;
  const r = await con.runAndReadAll('SELECT count(*)::INTEGER AS n FROM ' + src);
  out[table] = r.getRowObjectsJson()[0].n;
  if (statSync(p).isDirectory()) {
    const s = await con.runAndReadAll('SELECT count(DISTINCT study)::INTEGER AS n FROM ' + src);
    out[table + '#studies'] = s.getRowObjectsJson()[0].n;
  }
}
console.log(JSON.stringify(out));
`

// TestExternalReader is the acceptance test "an external client no one here wrote reads the
// output": the Parquet files exported through the API are read by DuckDB's Node package from
// npm, and its row counts equal the database's.
func TestExternalReader(t *testing.T) {
	nodeDir := nodeDuckDB(t)
	ts, db := newTestServer(t, testToken)
	dir := t.TempDir()
	m, err := NewClient(ts.URL, testToken).Export(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(nodeDir, "count.mjs")
	if err := os.WriteFile(script, []byte(nodeCountScript), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", script, dir)
	cmd.Dir = nodeDir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	var got map[string]int64
	if err := json.Unmarshal([]byte(strings.TrimSpace(string(out))), &got); err != nil {
		t.Fatalf("node output %q: %v", out, err)
	}
	t.Logf("node @duckdb/node-api@%s read: %s", nodeDuckDBVersion, strings.TrimSpace(string(out)))
	for _, et := range m.Tables {
		var want int64
		if err := db.QueryRow("SELECT count(*) FROM " + et.Name).Scan(&want); err != nil {
			t.Fatal(err)
		}
		if got[et.Name] != want {
			t.Errorf("node counts %d rows in %s, the database %d", got[et.Name], et.Name, want)
		}
	}
	var studies int64
	db.QueryRow("SELECT count(DISTINCT study) FROM runs").Scan(&studies)
	if got["runs#studies"] != studies {
		t.Errorf("node sees %d studies in runs, want %d", got["runs#studies"], studies)
	}
}

// missingTool skips the test, or fails it under CI=true, where every tool must be there.
func missingTool(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI: "+format, args...)
	}
	t.Skipf(format, args...)
}

// nodeArrowScript fetches an Arrow IPC answer itself and reads it with the apache-arrow
// package: list and struct columns must be JS arrays and objects, BIGINT a BigInt.
const nodeArrowScript = `
import { tableFromIPC } from 'apache-arrow';
const res = await fetch(process.argv[2]);
if (!res.ok) throw new Error('status ' + res.status);
const table = tableFromIPC(new Uint8Array(await res.arrayBuffer()));
const rows = [];
for (const row of table) {
  const tags = row.tags === null ? null : row.tags.toArray();
  rows.push({
    big: row.big === null ? null : (typeof row.big) + ':' + row.big.toString(),
    tags: tags === null ? null : { isArray: Array.isArray(tags), values: tags },
    st: row.st === null ? null : row.st.toJSON(),
  });
}
console.log(JSON.stringify({ types: table.schema.fields.map(f => f.name + ':' + String(f.type)), rows }));
`

// TestNodeArrowReadsListsAndStructs is the acceptance test "apache-arrow from npm reads list
// and struct columns as lists and structs", with the BIGINT above 2^53 exact.
func TestNodeArrowReadsListsAndStructs(t *testing.T) {
	sqlguardtest.NeedsQueries(t)
	nodeDir := nodePackage(t, "apache-arrow", nodeArrowVersion)
	ts, _ := newTestServer(t, "")
	script := filepath.Join(nodeDir, "arrow.mjs")
	if err := os.WriteFile(script, []byte(nodeArrowScript), 0o644); err != nil {
		t.Fatal(err)
	}
	q := "SELECT " + bigInt + "::BIGINT AS big, ['a', 'b'] AS tags, {'k': 1, 's': 'x'} AS st " +
		"UNION ALL SELECT NULL, NULL, NULL"
	cmd := exec.Command("node", script, ts.URL+"/v1/sql?format=arrow&q="+url.QueryEscape(q))
	cmd.Dir = nodeDir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	t.Logf("apache-arrow@%s read: %s", nodeArrowVersion, strings.TrimSpace(string(out)))
	want := `{"types":["big:Int64","tags:List<Utf8>","st:Struct<{k:Int32, s:Utf8}>"],` +
		`"rows":[{"big":"bigint:` + bigInt + `","tags":{"isArray":true,"values":["a","b"]},"st":{"k":1,"s":"x"}},` +
		`{"big":null,"tags":null,"st":null}]}`
	if got := strings.TrimSpace(string(out)); got != want {
		t.Errorf("node read\n%s\nwant\n%s", got, want)
	}
}
