package queryapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/dittolab/ditto/internal/sqlguard"
)

// Is makes errors.Is(err, ErrUnauthorized) hold for a 401 answer.
func (e *StatusError) Is(target error) bool {
	return target == ErrUnauthorized && e.Status == http.StatusUnauthorized
}

func (c *Client) do(ctx context.Context, method, path string, body any, accept string) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", MediaJSON)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("api: %s %s: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		var eb ErrorBody
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if json.Unmarshal(b, &eb) != nil || eb.Error == "" {
			eb.Error = fmt.Sprintf("%s: %s", resp.Status, bytes.TrimSpace(b))
		}
		return nil, &StatusError{Status: resp.StatusCode, Kind: eb.Kind, Message: eb.Error}
	}
	return resp, nil
}

// Health checks GET /healthz.
func (c *Client) Health(ctx context.Context) error {
	resp, err := c.do(ctx, http.MethodGet, "/healthz", nil, MediaJSON)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// Table is an answer in the columns format (FormatColumns), as Query decodes it.
type Table struct {
	Columns     []sqlguard.Column `json:"columns"`
	Rows        [][]any           `json:"rows"`
	RowCount    int               `json:"row_count"`
	Truncated   bool              `json:"truncated"`
	TruncatedBy string            `json:"truncated_by,omitempty"` // rows, bytes or timeout
	ElapsedMS   float64           `json:"elapsed_ms"`
}

// QueryRaw runs req and returns the answer's body in req.Format, for copying as is. The
// caller closes it.
func (c *Client) QueryRaw(ctx context.Context, req SQLRequest) (io.ReadCloser, error) {
	f, err := ParseFormat(req.Format)
	if err != nil {
		return nil, err
	}
	req.Format = string(f)
	resp, err := c.do(ctx, http.MethodPost, "/v1/sql", req, f.MediaType())
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// Query runs req and decodes the answer in the columns format (req.Format is ignored).
// Numbers are json.Number, exact, integers beyond 2^53 included.
func (c *Client) Query(ctx context.Context, req SQLRequest) (*Table, error) {
	req.Format = string(FormatColumns)
	body, err := c.QueryRaw(ctx, req)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	return DecodeTable(body)
}

// DecodeTable reads an answer in the columns format, keeping numbers exact (json.Number):
// the integers the answer carries as strings (beyond 2^53) are numbers again.
func DecodeTable(r io.Reader) (*Table, error) {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	var t Table
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("api: decode result: %w", err)
	}
	for j, c := range t.Columns {
		if !exactAsString(c.Type) {
			continue
		}
		for _, row := range t.Rows {
			if j >= len(row) {
				continue
			}
			if s, ok := row[j].(string); ok {
				row[j] = json.Number(s)
			}
		}
	}
	return &t, nil
}

// exactAsString reports whether a column of this DuckDB type carries its large values as
// strings in JSON (integers beyond 2^53, decimals of more than 15 digits).
func exactAsString(dbType string) bool {
	switch dbType {
	case "BIGINT", "UBIGINT", "HUGEINT", "UHUGEINT":
		return true
	}
	return strings.HasPrefix(dbType, "DECIMAL(")
}

// Studies returns GET /v1/studies.
func (c *Client) Studies(ctx context.Context) ([]Study, error) {
	resp, err := c.do(ctx, http.MethodGet, "/v1/studies", nil, MediaJSON)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out struct {
		Studies []Study `json:"studies"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("api: decode studies: %w", err)
	}
	return out.Studies, nil
}

// Export runs POST /v1/export and unpacks the Parquet files into dir; it returns the export's
// manifest.
func (c *Client) Export(ctx context.Context, dir string) (*ExportManifest, error) {
	resp, err := c.do(ctx, http.MethodPost, "/v1/export", nil, MediaTar)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if err := ExtractTar(resp.Body, dir); err != nil {
		return nil, err
	}
	return ReadManifest(dir)
}

// ReadManifest reads the manifest of an export in dir.
func ReadManifest(dir string) (*ExportManifest, error) {
	b, err := readFile(dir, ManifestName)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrExport, err)
	}
	var m ExportManifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%w: manifest: %v", ErrExport, err)
	}
	return &m, nil
}

var errNoManifest = errors.New("no manifest")

// Do sends method to path with body (if not nil) as JSON and returns the answer when its
// status is 2xx, else a *StatusError: for the endpoints served beside the query API (analyzer
// serve's /v1/ingestion and /v1/metrics). The caller closes the answer's body.
func (c *Client) Do(ctx context.Context, method, path string, body any) (*http.Response, error) {
	return c.do(ctx, method, path, body, "")
}
