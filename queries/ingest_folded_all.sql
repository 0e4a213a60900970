-- ingest_folded_all: every run attempt that has a run_folds row, for the ingester's filter of
-- folded attempts (read when ingestion starts, or after a failed read; it grows without
-- reading it again).
-- Inputs: none; table run_fold_rows (the rows of run_folds).
-- Outputs: study, run, attempt of each run_folds row.
SELECT study, run, attempt FROM run_fold_rows;
