package queryapi

import (
	"encoding/json"
	"fmt"
	"mime"
	"sort"
	"strconv"
	"strings"
)

// Format is an answer format of /v1/sql.
type Format string

// Answer formats.
const (
	FormatJSON    Format = "json"    // an array of records: [{"col": value, …}, …]
	FormatJSONL   Format = "jsonl"   // one record a line (newline-delimited JSON)
	FormatColumns Format = "columns" // {"columns": […], "rows": [[…], …], "row_count", "truncated", …}
	FormatCSV     Format = "csv"     // a header line, then one line a row
	FormatArrow   Format = "arrow"   // Arrow IPC stream
	FormatParquet Format = "parquet" // one Parquet file
)

// Media types of the formats.
const (
	MediaJSON    = "application/json"
	MediaJSONL   = "application/x-ndjson"
	MediaCSV     = "text/csv; charset=utf-8"
	MediaArrow   = "application/vnd.apache.arrow.stream"
	MediaParquet = "application/vnd.apache.parquet"
)

// Formats lists the formats in the order the docs give them.
var Formats = []Format{FormatJSON, FormatJSONL, FormatColumns, FormatCSV, FormatArrow, FormatParquet}

// ParseFormat accepts the format names and a few aliases ("" is json).
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "json", "records":
		return FormatJSON, nil
	case "jsonl", "ndjson", "jsonlines":
		return FormatJSONL, nil
	case "columns":
		return FormatColumns, nil
	case "csv":
		return FormatCSV, nil
	case "arrow", "arrow-ipc", "ipc", "arrows":
		return FormatArrow, nil
	case "parquet":
		return FormatParquet, nil
	}
	return "", fmt.Errorf("%w: format %q, want json, jsonl, columns, csv, arrow or parquet", ErrBadRequest, s)
}

// mediaFormats maps the media types an Accept header may name to formats.
var mediaFormats = map[string]Format{
	"application/json":                    FormatJSON,
	"application/x-ndjson":                FormatJSONL,
	"application/jsonl":                   FormatJSONL,
	"application/json-lines":              FormatJSONL,
	"application/jsonlines":               FormatJSONL,
	"text/csv":                            FormatCSV,
	"application/vnd.apache.arrow.stream": FormatArrow,
	"application/vnd.apache.arrow.file":   FormatArrow, // the stream is what we send; readers of files read it too
	"application/vnd.apache.parquet":      FormatParquet,
	"application/x-parquet":               FormatParquet,
}

// formatFromAccept picks the format an Accept header prefers (by q, then by order); "" when
// it names none of ours (*/* included: the default applies).
func formatFromAccept(accept string) Format {
	type choice struct {
		f   Format
		q   float64
		pos int
	}
	var choices []choice
	for i, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		f, ok := mediaFormats[mt]
		if !ok {
			continue
		}
		q := 1.0
		if qs, ok := params["q"]; ok {
			if v, err := strconv.ParseFloat(qs, 64); err == nil {
				q = v
			}
		}
		if q > 0 {
			choices = append(choices, choice{f, q, i})
		}
	}
	if len(choices) == 0 {
		return ""
	}
	sort.SliceStable(choices, func(a, b int) bool { return choices[a].q > choices[b].q })
	return choices[0].f
}

// MediaType returns the Content-Type of f.
func (f Format) MediaType() string {
	switch f {
	case FormatJSONL:
		return MediaJSONL
	case FormatCSV:
		return MediaCSV
	case FormatArrow:
		return MediaArrow
	case FormatParquet:
		return MediaParquet
	}
	return MediaJSON
}

// jsonValid reports whether s is one JSON value.
func jsonValid(s string) bool { return json.Valid([]byte(s)) }
