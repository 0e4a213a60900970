-- ingest_schema_check: how an existing database stores its run folds, checked when it is opened
-- for writing (CREATE TABLE IF NOT EXISTS leaves an older table as it is).
-- Inputs: none (the catalog, duckdb_tables() and duckdb_columns()).
-- Outputs: one row (folds_table, current): folds_table is true when run_folds is a table, as a
--   build before run_fold_rows stored it (migrate_run_folds_copy moves its rows), current is
--   true unless that table lacks its newest column, input_key (then only a replay of the stream
--   recomputes what it lacks).
SELECT count(*) > 0 AS folds_table,
       count(*) = 0 OR bool_or(c.column_name IS NOT NULL) AS current
FROM duckdb_tables() t
LEFT JOIN duckdb_columns() c
       ON c.table_oid = t.table_oid AND c.column_name = 'input_key'
WHERE t.schema_name = 'main' AND t.table_name = 'run_folds';
