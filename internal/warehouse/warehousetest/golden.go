package warehousetest

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// CheckGolden compares got with testdata/golden/<name>.golden of the package under test, or
// rewrites that file when the test runs with -update.
func CheckGolden(t testing.TB, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		test, _, _ := strings.Cut(t.Name(), "/")
		t.Fatalf("%v (run go test -run %s -update)", err, test)
	}
	if string(want) != got {
		t.Errorf("%s differs from %s:\n got: %.3000s\nwant: %.3000s", name, path, got, want)
	}
}
