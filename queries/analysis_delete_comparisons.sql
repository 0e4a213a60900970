-- analysis_delete_comparisons: remove a study's comparisons before they are written again.
-- Inputs: $1 study (VARCHAR); table comparisons.
-- Outputs: none (rows deleted); run in the transaction that inserts the new rows.
DELETE FROM comparisons WHERE study = $1;
