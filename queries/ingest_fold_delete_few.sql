-- ingest_fold_delete_few: ingest_fold_delete for a few attempts (at most a few dozen), without
-- a join: DELETE ... USING a list of the attempts' strings left 2-6 KB a call (of 10 to 64
-- attempts) in DuckDB 1.5.6's heap for good; the tests against the lists, 0.02 KB or less
-- (docs/benchmarks.md, thirty-sixth session).
-- Inputs: $1 the attempts' runs (VARCHAR[]); $2 the attempts as 'study.run.attempt' (VARCHAR[]:
--   study and run are subject tokens, without dots); $3 and $4 the smallest and largest run.
-- Outputs: rows deleted from run_fold_rows.
DELETE FROM run_fold_rows
WHERE run BETWEEN $3 AND $4
  AND list_contains($1::VARCHAR[], run)
  AND list_contains($2::VARCHAR[], study || '.' || run || '.' || CAST(attempt AS VARCHAR));
