-- ingest_folds: stores the run_folds rows of the attempts folded in one transaction.
-- Inputs: ingest_folds, an Arrow record batch registered as a view by the ingester, with the
--   columns of table run_fold_rows; the ingester has already deleted the rows these replace
--   (see ingest_fold_delete.sql).
-- Outputs: rows appended to run_fold_rows.
INSERT INTO run_fold_rows BY NAME SELECT * FROM ingest_folds;
