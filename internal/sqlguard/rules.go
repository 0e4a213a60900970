package sqlguard

// allowedTableFunctions read only DuckDB's catalog or generate values. Anything else is
// refused unless it is a user-defined table macro: an allowlist, because extensions add new
// file readers (read_xlsx, iceberg_scan, delta_scan, …) that a denylist would not know.
var allowedTableFunctions = set(
	"range", "generate_series", "unnest", "repeat", "repeat_row", "json_each", "json_tree",
	"summary", "histogram", "histogram_values", "test_all_types", "icu_calendar_names",
	"pg_timezone_names", "sql_auto_complete",
	"duckdb_columns", "duckdb_constraints", "duckdb_databases", "duckdb_dependencies",
	"duckdb_extensions", "duckdb_functions", "duckdb_indexes", "duckdb_keywords", "duckdb_memory",
	"duckdb_optimizers", "duckdb_schemas", "duckdb_sequences", "duckdb_settings", "duckdb_tables",
	"duckdb_types", "duckdb_views", "duckdb_variables", "duckdb_temporary_files",
	"duckdb_approx_database_count", "duckdb_connection_count",
	"pragma_table_info", "pragma_show", "pragma_version", "pragma_database_size",
	"pragma_storage_info", "pragma_metadata_info", "pragma_platform", "pragma_user_agent",
	"pragma_collations",
)

// deniedTableFunctions give a precise reason for the best-known refusals; every other
// function outside the allowlist is refused too.
var deniedTableFunctions = map[string]string{
	"read_csv": "reads files", "read_csv_auto": "reads files", "sniff_csv": "reads files",
	"read_parquet": "reads files", "parquet_scan": "reads files", "parquet_metadata": "reads files",
	"parquet_schema": "reads files", "parquet_file_metadata": "reads files",
	"parquet_kv_metadata": "reads files", "parquet_full_metadata": "reads files",
	"parquet_bloom_probe": "reads files",
	"read_json":           "reads files", "read_json_auto": "reads files", "read_json_objects": "reads files",
	"read_json_objects_auto": "reads files", "read_ndjson": "reads files",
	"read_ndjson_auto": "reads files", "read_ndjson_objects": "reads files",
	"read_text": "reads files", "read_blob": "reads files", "read_duckdb": "reads files",
	"glob":  "lists files",
	"query": "runs SQL text the guard cannot see", "query_table": "runs SQL text the guard cannot see",
	"json_execute_serialized_sql": "runs SQL text the guard cannot see",
	"arrow_scan":                  "dereferences raw pointers", "arrow_scan_dumb": "dereferences raw pointers",
	"checkpoint": "writes the database file", "force_checkpoint": "writes the database file",
	"enable_logging": "changes settings", "disable_logging": "changes settings",
	"truncate_duckdb_logs": "changes state", "enable_profiling": "changes settings",
	"disable_profiling": "changes settings", "enable_peg_parser": "changes settings",
	"disable_peg_parser": "changes settings",
	"which_secret":       "reveals secrets", "duckdb_secrets": "reveals secrets",
	"iceberg_scan": "reads files or URLs", "delta_scan": "reads files or URLs",
	"sqlite_scan": "reads files", "postgres_scan": "reads remote databases",
	"mysql_scan": "reads remote databases", "read_xlsx": "reads files",
}

// deniedScalar are scalar functions with side effects outside the query.
var deniedScalar = map[string]string{
	"nextval":   "advances a sequence",
	"write_log": "writes to the database log",
	"getenv":    "reads the process environment",
}

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}
