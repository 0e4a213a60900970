-- ingest_fold_delete: removes the run_folds rows about to be recomputed.
-- Inputs: the attempts as three parallel lists: $1 studies (VARCHAR[]), $2 runs (VARCHAR[]),
--   $3 attempts (INTEGER[]).
-- Outputs: rows deleted from run_folds.
DELETE FROM run_folds
USING (
    SELECT unnest($1::VARCHAR[]) AS study, unnest($2::VARCHAR[]) AS run,
           unnest($3::INTEGER[]) AS attempt
) k
WHERE run_folds.study = k.study AND run_folds.run = k.run AND run_folds.attempt = k.attempt;
