-- ingest_folded_count: how many run_folds rows there are, to size the ingester's filter of
-- folded attempts before ingest_folded_all fills it.
-- Inputs: none; table run_fold_rows (the rows of run_folds).
-- Outputs: the count.
SELECT count(*) FROM run_fold_rows;
