package sqlguard

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
)

// querier is what Check needs from a DuckDB handle: *sql.DB, *sql.Conn and *sql.Tx satisfy it.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Check parses query with DuckDB's parser (never binding or running it) and returns nil if
// it is one SELECT statement whose parse tree names no refused function or file. Refusals
// are *RefusedError (errors.Is(err, ErrRefused)); text that does not parse is ErrQuery. db is any connection to a DuckDB database
// with the json extension (built into the driver).
func Check(ctx context.Context, db querier, query string) error {
	if strings.TrimSpace(query) == "" {
		return ErrEmpty
	}
	tree, err := parse(ctx, db, query)
	if err != nil {
		return err
	}
	return walk(ctx, db, tree)
}

// parsed is json_serialize_sql's answer.
type parsed struct {
	Error        bool              `json:"error"`
	ErrorType    string            `json:"error_type"`
	ErrorMessage string            `json:"error_message"`
	Statements   []json.RawMessage `json:"statements"`
}

// parse returns the parse tree of the single SELECT in query.
func parse(ctx context.Context, db querier, query string) (any, error) {
	var raw string
	// The query is a bound parameter: it is data to the parser call, never SQL of its own.
	if err := db.QueryRowContext(ctx, "SELECT json_serialize_sql($1::VARCHAR)::VARCHAR", query).Scan(&raw); err != nil {
		return nil, fmt.Errorf("sqlguard: parse: %w", err)
	}
	var p parsed
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		return nil, fmt.Errorf("sqlguard: parse: decode parse tree: %w", err)
	}
	if p.Error {
		// json_serialize_sql refuses to serialize anything but SELECT statements: that is
		// exactly the rule, and it is DuckDB's parser deciding, not a keyword match here.
		if strings.Contains(p.ErrorMessage, "Only SELECT") {
			kw := leadingKeyword(query)
			found := "a statement that is not a SELECT"
			if kw != "" && kw != "SELECT" && kw != "WITH" && kw != "FROM" && kw != "VALUES" && kw != "(" {
				found = kw
			}
			return nil, &RefusedError{Kind: KindStatement, Name: kw,
				Reason: fmt.Sprintf("only a single read-only SELECT may run; found %s", found)}
		}
		// Not a refusal: the text is not SQL DuckDB understands.
		return nil, fmt.Errorf("%w: %s", ErrQuery, p.ErrorMessage)
	}
	switch len(p.Statements) {
	case 0:
		return nil, ErrEmpty
	case 1:
	default:
		return nil, &RefusedError{Kind: KindMultiple,
			Reason: fmt.Sprintf("only a single statement may run; found %d", len(p.Statements))}
	}
	dec := json.NewDecoder(strings.NewReader(string(p.Statements[0])))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return nil, fmt.Errorf("sqlguard: parse: decode statement: %w", err)
	}
	return tree, nil
}

// leadingKeyword returns the first word of query, upper-cased, skipping white space,
// comments and opening parentheses; "" if there is none.
func leadingKeyword(query string) string {
	s := query
	for {
		s = strings.TrimLeft(s, " \t\r\n(")
		switch {
		case strings.HasPrefix(s, "--"):
			if i := strings.IndexByte(s, '\n'); i >= 0 {
				s = s[i+1:]
				continue
			}
			return ""
		case strings.HasPrefix(s, "/*"):
			if i := strings.Index(s, "*/"); i >= 0 {
				s = s[i+2:]
				continue
			}
			return ""
		}
		break
	}
	end := strings.IndexFunc(s, func(r rune) bool {
		return !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	})
	if end < 0 {
		end = len(s)
	}
	return strings.ToUpper(s[:end])
}
