-- ingest_folded_keys: which of some run attempts already have a run_folds row.
-- Inputs: the attempts as three parallel lists: $1 studies (VARCHAR[]), $2 runs (VARCHAR[]),
--   $3 attempts (INTEGER[]); table run_fold_rows (the rows of run_folds).
-- Outputs: study, run, attempt.
WITH k AS (
    SELECT unnest($1::VARCHAR[]) AS study, unnest($2::VARCHAR[]) AS run,
           unnest($3::INTEGER[]) AS attempt
)
SELECT f.study, f.run, f.attempt
FROM run_fold_rows f
SEMI JOIN k ON f.study = k.study AND f.run = k.run AND f.attempt = k.attempt;
