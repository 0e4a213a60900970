package queryapi

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/dittolab/ditto/internal/sqlguard"
)

// Format is an output format of POST /v1/sql.
type Format string

// Output formats.
const (
	FormatJSON  Format = "json"
	FormatCSV   Format = "csv"
	FormatArrow Format = "arrow" // Arrow IPC stream format
)

// Media types of the formats.
const (
	MediaJSON  = "application/json"
	MediaCSV   = "text/csv; charset=utf-8"
	MediaArrow = "application/vnd.apache.arrow.stream"
)

// ParseFormat accepts json, csv, arrow (also "arrow-ipc" and "ipc").
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "json":
		return FormatJSON, nil
	case "csv":
		return FormatCSV, nil
	case "arrow", "arrow-ipc", "ipc":
		return FormatArrow, nil
	}
	return "", fmt.Errorf("%w: format %q, want json, csv or arrow", ErrBadRequest, s)
}

// formatFromAccept picks a format from an Accept header; "" when it names none of ours.
func formatFromAccept(accept string) Format {
	switch {
	case strings.Contains(accept, "application/vnd.apache.arrow"):
		return FormatArrow
	case strings.Contains(accept, "text/csv"):
		return FormatCSV
	case strings.Contains(accept, "application/json"):
		return FormatJSON
	}
	return ""
}

// MediaType returns the Content-Type of f.
func (f Format) MediaType() string {
	switch f {
	case FormatCSV:
		return MediaCSV
	case FormatArrow:
		return MediaArrow
	}
	return MediaJSON
}

// Table is the JSON form of a result: the body of a json answer of POST /v1/sql.
type Table struct {
	Columns   []sqlguard.Column `json:"columns"`
	Rows      [][]any           `json:"rows"`
	RowCount  int               `json:"row_count"`
	Truncated bool              `json:"truncated"`
	ElapsedMS float64           `json:"elapsed_ms"`
}

// NewTable converts a result to its JSON form.
func NewTable(res *sqlguard.Result) *Table {
	t := &Table{
		Columns:   res.Columns,
		Rows:      make([][]any, len(res.Rows)),
		RowCount:  len(res.Rows),
		Truncated: res.Truncated,
		ElapsedMS: float64(res.Elapsed.Microseconds()) / 1000,
	}
	if t.Columns == nil {
		t.Columns = []sqlguard.Column{}
	}
	for i, row := range res.Rows {
		out := make([]any, len(row))
		for j, v := range row {
			out[j] = jsonValue(v, res.Columns[j].Type)
		}
		t.Rows[i] = out
	}
	return t
}

// WriteJSON writes res as a Table.
func WriteJSON(w io.Writer, res *sqlguard.Result) error {
	return json.NewEncoder(w).Encode(NewTable(res))
}

// WriteCSV writes res as CSV with a header line; NULL is an empty field.
func WriteCSV(w io.Writer, res *sqlguard.Result) error {
	cw := csv.NewWriter(w)
	header := make([]string, len(res.Columns))
	for i, c := range res.Columns {
		header[i] = c.Name
	}
	if err := cw.Write(header); err != nil {
		return err
	}
	rec := make([]string, len(res.Columns))
	for _, row := range res.Rows {
		for j, v := range row {
			rec[j], _ = textValue(v, res.Columns[j].Type)
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// Write writes res in format f.
func Write(w io.Writer, f Format, res *sqlguard.Result) error {
	switch f {
	case FormatCSV:
		return WriteCSV(w, res)
	case FormatArrow:
		return WriteArrow(w, res)
	}
	return WriteJSON(w, res)
}
