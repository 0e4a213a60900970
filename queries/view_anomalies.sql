-- view_anomalies: finished run attempts whose history the events fold refused, or whose
-- run.finished totals disagree with what the fold recomputed from the events.
-- Inputs: run_folds.
-- Outputs: view anomalies(study, run, attempt, status, kind, detail): kind is fold_error or
--   check_error; detail is the message.
CREATE OR REPLACE VIEW anomalies AS
SELECT study, run, attempt, status, 'fold_error' AS kind, fold_error AS detail
FROM run_folds WHERE fold_error IS NOT NULL
UNION ALL
SELECT study, run, attempt, status, 'check_error' AS kind, check_error AS detail
FROM run_folds WHERE check_error IS NOT NULL;
