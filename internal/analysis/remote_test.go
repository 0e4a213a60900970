package analysis

import (
	"bytes"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/queryapi"
	"github.com/dittolab/ditto/internal/sqlguard"
	"github.com/dittolab/ditto/internal/warehouse/warehousetest"
)

// TestComputeThroughAPI: through a serving analyzer's HTTP API (real server on loopback over
// the same database) the report is byte-identical to the one read from the database.
func TestComputeThroughAPI(t *testing.T) {
	envs, _ := harnessStudy("s1")
	w := ingest(t, envs)
	srv, err := queryapi.NewServer(w.DB(), queryapi.Config{Token: "secret"})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	ctx := warehousetest.Context(t, 60*time.Second)
	q := APIQuerier(queryapi.NewClient(hs.URL, "secret"))
	remote, err := ComputeFrom(ctx, q, "s1", testOpts)
	if err != nil {
		t.Fatalf("ComputeFrom(API) = %v", err)
	}
	var a, b bytes.Buffer
	if err := WriteJSON(&a, remote); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&b, mustCompute(t, w.DB(), "s1")); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Errorf("report through the API differs from the local one:\n%s\n---\n%s", a.Bytes(), b.Bytes())
	}
	if _, err := ComputeFrom(ctx, q, "nope", testOpts); !errors.Is(err, ErrNoStudy) {
		t.Errorf("ComputeFrom(API, unknown) = %v, want ErrNoStudy", err)
	}

	// A server whose row limit is below the study's runs: a clear ErrTooLarge.
	small, err := queryapi.NewServer(w.DB(), queryapi.Config{Limits: sqlguard.Config{MaxRows: 5, RowsCap: 5}})
	if err != nil {
		t.Fatal(err)
	}
	hs2 := httptest.NewServer(small)
	t.Cleanup(hs2.Close)
	if _, err := ComputeFrom(ctx, APIQuerier(queryapi.NewClient(hs2.URL, "")), "s1", testOpts); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ComputeFrom(small API) = %v, want ErrTooLarge", err)
	}
}

func TestInline(t *testing.T) {
	tests := []struct {
		name    string
		sql     string
		args    []any
		want    string
		wantErr bool
	}{
		{"params", "-- h: x\n-- Inputs: y\nSELECT $1, $2, $10;\n", []any{"it's", nil, 3, 4, 5, 6, 7, 8, 9, int64(10)}, "SELECT 'it''s', NULL, 10", false},
		{"missing", "SELECT $2", []any{"a"}, "", true},
		{"bad type", "SELECT $1", []any{1.5}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Inline(tt.sql, tt.args)
			if (err != nil) != tt.wantErr || (!tt.wantErr && got != tt.want) {
				t.Errorf("Inline(%q) = %q, %v; want %q (error %v)", tt.sql, got, err, tt.want, tt.wantErr)
			}
		})
	}
}
