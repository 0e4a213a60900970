package queryapi

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// nodeDuckDBVersion pins the npm package used as the independent reader of exports.
const nodeDuckDBVersion = "1.5.6-r.1"

// nodeDuckDB installs @duckdb/node-api from npm into a cache directory (once per machine and
// version) and returns the directory to run node in. It skips the test, saying why, when
// node, npm or the registry are not there.
func nodeDuckDB(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the external-reader test installs @duckdb/node-api from npm")
	}
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: no external engine to read the Parquet export with", tool)
		}
	}
	dir := filepath.Join(os.TempDir(), "ditto-test-node-duckdb-"+nodeDuckDBVersion)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@duckdb", "node-api", "package.json")); err == nil {
		return dir
	}
	tmp, err := os.MkdirTemp(os.TempDir(), "ditto-test-node-duckdb-*")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--loglevel=error",
		"--prefix", tmp, "@duckdb/node-api@"+nodeDuckDBVersion)
	out, err := cmd.CombinedOutput()
	if err != nil {
		os.RemoveAll(tmp)
		t.Skipf("npm install @duckdb/node-api@%s failed (is the npm registry reachable?): %v\n%s", nodeDuckDBVersion, err, out)
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
