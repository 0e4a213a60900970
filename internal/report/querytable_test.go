package report

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/queryapi"
	"github.com/dittolab/ditto/internal/sqlguard"
	"github.com/dittolab/ditto/internal/sqlguard/sqlguardtest"
	_ "github.com/duckdb/duckdb-go/v2"
)

func TestWriteQueryTable(t *testing.T) {
	tab := &queryapi.Table{
		Columns: []sqlguard.Column{{Name: "study", Type: "VARCHAR"}, {Name: "n", Type: "BIGINT"}, {Name: "tags", Type: "VARCHAR[]"},
			{Name: "mean", Type: "DOUBLE"}},
		Rows: [][]any{{"alpha", json.Number("7"), []any{"x"}, json.Number("5551.392600000001")},
			{"b", json.Number("12345"), nil, json.Number("0.30000000000000004")}},
	}
	var b strings.Builder
	if err := WriteQueryTable(&b, tab); err != nil {
		t.Fatal(err)
	}
	want := "study  n      tags   mean\n" +
		"-----  -----  -----  ---------\n" +
		"alpha      7  [\"x\"]  5551.3926\n" +
		"b      12345  NULL         0.3\n" +
		"(2 rows)\n"
	if b.String() != want {
		t.Errorf("WriteQueryTable =\n%s\nwant\n%s", b.String(), want)
	}
}

// TestQueryTableRoundsDoubles: a mean DuckDB computes with float noise prints rounded in the
// text table `analyzer sql` writes (the path of a local file: guard, columns answer, table),
// and exactly in its CSV.
func TestQueryTableRoundsDoubles(t *testing.T) {
	sqlguardtest.NeedsQueries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	g, err := sqlguard.New(db, sqlguard.Config{})
	if err != nil {
		t.Fatal(err)
	}
	const q = "SELECT avg(x) AS mean_tokens, 0.1::DOUBLE + 0.2::DOUBLE AS sum, 7::BIGINT AS n FROM (VALUES (4058.8498::DOUBLE), (7598.3366::DOUBLE)) t(x)"
	answer := func(f queryapi.Format) []byte {
		rows, err := g.Stream(ctx, q, sqlguard.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var buf bytes.Buffer
		sum, err := queryapi.WriteAnswer(&buf, f, rows)
		if err == nil {
			err = sum.Err
		}
		if err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	tab, err := queryapi.DecodeTable(bytes.NewReader(answer(queryapi.FormatColumns)))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := WriteQueryTable(&out, tab); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"5828.5932", " 0.3 "} {
		if !strings.Contains(out.String()+" ", w) {
			t.Errorf("table lacks %q:\n%s", w, out.String())
		}
	}
	for _, noise := range []string{"5828.5931999", "5828.5932000", "0.3000000"} {
		if strings.Contains(out.String(), noise) {
			t.Errorf("table prints float noise %q:\n%s", noise, out.String())
		}
	}
	// The machine format keeps the exact double.
	if csv := string(answer(queryapi.FormatCSV)); !strings.Contains(csv, "0.30000000000000004") {
		t.Errorf("CSV = %q, want the exact 0.30000000000000004", csv)
	}
}

func TestDecimal(t *testing.T) {
	tests := []struct {
		give float64
		want string
	}{
		{5551.392600000001, "5551.3926"},
		{5828.593199999999, "5828.5932"},
		{0.30000000000000004, "0.3"},
		{1.0 / 3, "0.333333333333333"},
		{2700, "2700"},
		{-12.5, "-12.5"},
		{0, "0"},
		{1e-7, "1e-07"},
		{0.00012345, "0.00012345"},
		{123456789012345678, "1.23456789012346e+17"},
	}
	for _, tt := range tests {
		if got := Decimal(tt.give); got != tt.want {
			t.Errorf("Decimal(%v) = %q, want %q", tt.give, got, tt.want)
		}
	}
}

func TestPeriod(t *testing.T) {
	for give, want := range map[time.Duration]string{time.Hour: "hour", 24 * time.Hour: "day", 7 * 24 * time.Hour: "week",
		30 * time.Minute: "30 minutes", time.Minute: "minute", 90 * time.Minute: "1 hour 30 minutes"} {
		if got := period(give); got != want {
			t.Errorf("period(%v) = %q, want %q", give, got, want)
		}
	}
}
