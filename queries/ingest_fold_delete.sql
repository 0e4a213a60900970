-- ingest_fold_delete: removes the run_folds rows (stored in run_fold_rows) about to be recomputed,
-- for more attempts than ingest_fold_delete_few takes: a join of their strings, which leaves a few
-- KB in DuckDB 1.5.6's heap at each call.
-- Inputs: the attempts as three parallel lists: $1 studies (VARCHAR[]), $2 runs (VARCHAR[]),
--   $3 attempts (INTEGER[]).
-- Outputs: rows deleted from run_fold_rows.
DELETE FROM run_fold_rows
USING (
    SELECT unnest($1::VARCHAR[]) AS study, unnest($2::VARCHAR[]) AS run,
           unnest($3::INTEGER[]) AS attempt
) k
WHERE run_fold_rows.study = k.study AND run_fold_rows.run = k.run AND run_fold_rows.attempt = k.attempt;
