-- analysis_delete_metrics: remove a study's metrics before they are written again.
-- Inputs: $1 study (VARCHAR); table metrics.
-- Outputs: none (rows deleted); run in the transaction that inserts the new rows.
DELETE FROM metrics WHERE study = $1;
