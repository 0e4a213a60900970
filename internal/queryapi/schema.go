package queryapi

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/agnivade/levenshtein"
	"github.com/dittolab/ditto/queries"
)

// SchemaTable is one public table or view in GET /v1/schema.
type SchemaTable struct {
	queries.Object
	Columns []SchemaColumn `json:"columns"`
}

// SchemaColumn is a column of a public table or view.
type SchemaColumn struct {
	Name     string `json:"name"`
	Type     string `json:"type"` // DuckDB's type name
	Nullable bool   `json:"nullable"`
}

// ReadSchema returns the public objects that exist in db, in the order given, with their
// columns in order.
func ReadSchema(ctx context.Context, db *sql.DB, public []queries.Object) ([]SchemaTable, error) {
	rows, err := db.QueryContext(ctx, `SELECT table_name, column_name, data_type, is_nullable
		FROM duckdb_columns()
		WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal
		ORDER BY table_name, column_index`)
	if err != nil {
		return nil, fmt.Errorf("api: schema: %w", err)
	}
	defer rows.Close()
	cols := map[string][]SchemaColumn{}
	for rows.Next() {
		var table string
		var c SchemaColumn
		if err := rows.Scan(&table, &c.Name, &c.Type, &c.Nullable); err != nil {
			return nil, fmt.Errorf("api: schema: %w", err)
		}
		cols[table] = append(cols[table], c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("api: schema: %w", err)
	}
	out := []SchemaTable{}
	for _, o := range public {
		if c, ok := cols[o.Name]; ok {
			out = append(out, SchemaTable{Object: o, Columns: c})
		}
	}
	return out, nil
}

func (s *Server) schema(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	tables, err := ReadSchema(ctx, s.db, s.cfg.Public)
	if err != nil {
		s.cfg.Logger.Warn("api: schema", "err", err)
		writeError(w, http.StatusInternalServerError, "error", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Tables []SchemaTable `json:"tables"`
	}{tables})
}

// didYouMean is DuckDB's hint in a catalog error: Did you mean "ingest_state"?
var didYouMean = regexp.MustCompile(`(?i)\s*Did you mean "([^"]+)"\??`)

// missingName finds the name DuckDB could not find: Table with name nope does not exist!
var missingName = regexp.MustCompile(`with name (\S+) does not exist`)

// hintError is a query error whose message names no internal table.
type hintError struct {
	err error
	msg string
}

func (e *hintError) Error() string { return e.msg }
func (e *hintError) Unwrap() error { return e.err }

// unhint rewrites DuckDB's "Did you mean" hint when it names an object users do not see: it
// names the closest public object instead, or nothing.
func (s *Server) unhint(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	m := didYouMean.FindStringSubmatchIndex(msg)
	if m == nil {
		return err
	}
	hinted := msg[m[2]:m[3]]
	if i := strings.LastIndexByte(hinted, '.'); i >= 0 {
		hinted = hinted[i+1:]
	}
	if s.visible(hinted) {
		return err
	}
	repl := ""
	if mm := missingName.FindStringSubmatch(msg); mm != nil {
		if best := s.closestPublic(mm[1]); best != "" {
			repl = fmt.Sprintf("\nDid you mean %q?", best)
		}
	}
	var he *hintError
	if errors.As(err, &he) {
		err = he.err
	}
	return &hintError{err: err, msg: msg[:m[0]] + repl + msg[m[1]:]}
}

// visible reports whether name is not one of the hidden objects.
func (s *Server) visible(name string) bool {
	for _, h := range s.cfg.Hidden {
		if strings.EqualFold(h, name) {
			return false
		}
	}
	return true
}

// closestPublic returns the public object nearest to name by edit distance, if it is near
// enough to be a plausible typo (at most a third of the name's length).
func (s *Server) closestPublic(name string) string {
	best, bestD := "", len(name)/3+1
	for _, o := range s.cfg.Public {
		if d := levenshtein.ComputeDistance(strings.ToLower(name), o.Name); d < bestD {
			best, bestD = o.Name, d
		}
	}
	return best
}
