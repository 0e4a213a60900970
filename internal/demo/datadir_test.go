package demo

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestPrepareDataDir: a demo uses a new or empty directory, or one it made (emptied unless
// kept); it refuses any other, fresh or kept, and leaves its files alone.
func TestPrepareDataDir(t *testing.T) {
	write := func(t *testing.T, path string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name    string
		files   []string // in the directory before
		fresh   bool
		wantErr error
		want    []string // in the directory after
	}{
		{name: "new", fresh: true, want: []string{MarkerFile}},
		{name: "empty", files: []string{}, fresh: true, want: []string{MarkerFile}},
		{name: "an earlier demo's, fresh", files: []string{MarkerFile, "ditto.duckdb", "jetstream/x"}, fresh: true, want: []string{MarkerFile}},
		{name: "an earlier demo's, kept", files: []string{MarkerFile, "ditto.duckdb"}, want: []string{MarkerFile, "ditto.duckdb"}},
		{name: "someone's files, fresh", files: []string{"thesis.tex"}, fresh: true, wantErr: ErrNotDemoDir, want: []string{"thesis.tex"}},
		{name: "someone's files, kept", files: []string{"thesis.tex"}, wantErr: ErrNotDemoDir, want: []string{"thesis.tex"}},
		{name: "a directory named like the marker", files: []string{MarkerFile + "/x"}, fresh: true, wantErr: ErrNotDemoDir, want: []string{MarkerFile}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "demo")
			if tt.files != nil {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for _, f := range tt.files {
				write(t, filepath.Join(dir, f))
			}
			err := prepareDataDir(dir, tt.fresh)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("prepareDataDir(fresh %v) = %v, want %v", tt.fresh, err, tt.wantErr)
			}
			ents, rerr := os.ReadDir(dir)
			if rerr != nil {
				t.Fatal(rerr)
			}
			var got []string
			for _, e := range ents {
				got = append(got, e.Name())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("after prepareDataDir(fresh %v): %q, want %q", tt.fresh, got, tt.want)
			}
		})
	}
}
