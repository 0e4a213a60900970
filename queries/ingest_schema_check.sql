-- ingest_schema_check: whether run_folds has the columns this build writes, checked when a
-- database is opened for writing (CREATE TABLE IF NOT EXISTS leaves an older table as it is).
-- Inputs: none (the catalog, duckdb_columns()).
-- Outputs: one row (current): true when run_folds has its newest column, input_key.
SELECT count(*) > 0 AS current
FROM duckdb_columns()
WHERE table_name = 'run_folds' AND column_name = 'input_key';
