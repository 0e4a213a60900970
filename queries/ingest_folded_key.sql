-- ingest_folded_key: whether a run attempt already has a run_folds row (the ingester asks for
-- each attempt its filter of folded attempts may hold).
-- Inputs: $1 study, $2 run, $3 attempt; table run_fold_rows (the rows of run_folds).
-- Outputs: the attempt's study, run and attempt if it has a row; no row otherwise.
-- One attempt a query, by equality: a join or an IN list of several attempts' strings
-- (ingest_folded_keys until the thirty-fifth session) left 220-260 bytes an attempt in DuckDB
-- 1.5.6's heap at every query, which neither a reattach nor a new connection gave back
-- (docs/benchmarks.md, thirty-fifth session); an equality filter leaves nothing.
SELECT study, run, attempt FROM run_fold_rows WHERE study = $1 AND run = $2 AND attempt = $3;
