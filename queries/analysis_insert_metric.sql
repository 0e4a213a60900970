-- analysis_insert_metric: store one metric of one cell.
-- Inputs: $1 study, $2 task, $3 model, $4 condition (VARCHAR), $5 n (BIGINT), $6 metric
--   (VARCHAR), $7 value, $8 se (DOUBLE or NULL), $9 estimated (BOOLEAN), $10 sampling_se
--   (DOUBLE or NULL).
-- Outputs: one row of table metrics.
INSERT INTO metrics (study, task, model, condition, n, metric, value, se, estimated, sampling_se)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10);
