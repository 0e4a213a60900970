package sqlguard

import (
	"context"
	"fmt"
	"strings"
)

// walk visits every node of a parse tree and refuses table functions that are not allowed,
// scalar functions with side effects and table names that are paths or URLs.
func walk(ctx context.Context, db querier, node any) error {
	switch n := node.(type) {
	case []any:
		for _, c := range n {
			if err := walk(ctx, db, c); err != nil {
				return err
			}
		}
	case map[string]any:
		switch n["type"] {
		case "TABLE_FUNCTION":
			if fn, ok := n["function"].(map[string]any); ok {
				if err := checkTableFunction(ctx, db, name(fn["function_name"])); err != nil {
					return err
				}
				// The function's arguments are expressions and are walked below like any other.
			}
		case "BASE_TABLE":
			if err := checkTableName(name(n["table_name"]), name(n["schema_name"])); err != nil {
				return err
			}
			if err := checkRawView(ctx, db, name(n["table_name"])); err != nil {
				return err
			}
		}
		if _, isTableFunc := n["function"]; !isTableFunc {
			if fname, ok := n["function_name"].(string); ok {
				if reason, denied := deniedScalar[strings.ToLower(fname)]; denied {
					return &RefusedError{Kind: KindFunction, Name: fname,
						Reason: fmt.Sprintf("function %s is not allowed: %s", fname, reason)}
				}
			}
		}
		for _, c := range n {
			if err := walk(ctx, db, c); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkRawView refuses a view with no SQL text: one a program registered over raw pointers
// (an Arrow stream: the ingester's ingest_batch and ingest_folds), which arrow_scan reads. Its
// stream may be another process's or already freed (binding it then crashes the process), or
// in use by the ingester, whose batch a user's scan would take.
func checkRawView(ctx context.Context, db querier, table string) error {
	var n int
	err := db.QueryRowContext(ctx,
		`SELECT count(*) FROM duckdb_views() WHERE lower(view_name) = lower($1) AND NOT internal AND coalesce(sql, '') = ''`,
		table).Scan(&n)
	if err != nil {
		return fmt.Errorf("sqlguard: look up view %s: %w", table, err)
	}
	if n > 0 {
		return &RefusedError{Kind: KindFunction, Name: table,
			Reason: fmt.Sprintf("%s is a view over raw pointers (arrow_scan), which is not allowed", table)}
	}
	return nil
}

func name(v any) string {
	s, _ := v.(string)
	return s
}

func checkTableFunction(ctx context.Context, db querier, fname string) error {
	lower := strings.ToLower(fname)
	if allowedTableFunctions[lower] {
		return nil
	}
	if reason, ok := deniedTableFunctions[lower]; ok {
		return &RefusedError{Kind: KindFunction, Name: fname,
			Reason: fmt.Sprintf("table function %s is not allowed: %s", fname, reason)}
	}
	// A table macro defined in the database (a view with parameters, made by the analyzer's
	// own DDL) reads only what its body reads; its body was written by us, not by the user.
	var n int
	err := db.QueryRowContext(ctx,
		`SELECT count(*) FROM duckdb_functions() WHERE function_name = $1 AND function_type = 'table_macro' AND NOT internal`,
		lower).Scan(&n)
	if err != nil {
		return fmt.Errorf("sqlguard: look up table macro %s: %w", fname, err)
	}
	if n > 0 {
		return nil
	}
	return &RefusedError{Kind: KindFunction, Name: fname,
		Reason: fmt.Sprintf("table function %s is not on the allowlist (it may read files or URLs or change state)", fname)}
}

// checkTableName refuses names that DuckDB would turn into a replacement scan of a file or
// URL ('runs.csv', 'data/*.parquet', 'https://…', 's3://…'). Tables and views of the
// projection have plain identifiers.
func checkTableName(table, schema string) error {
	for _, s := range []string{table, schema} {
		if strings.ContainsAny(s, "/\\:.*?~") {
			return &RefusedError{Kind: KindFile, Name: s,
				Reason: fmt.Sprintf("%q looks like a file or URL; reading files and URLs is not allowed", s)}
		}
	}
	return nil
}
