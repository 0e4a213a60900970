-- migrate_run_folds_drop: drops the run_folds table of a build before run_fold_rows once
-- migrate_run_folds_copy has moved its rows; the schema then creates the view run_folds.
-- Inputs: table run_folds.
-- Outputs: none (DDL).
DROP TABLE run_folds;
