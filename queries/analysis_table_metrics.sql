-- analysis_table_metrics: the per-cell metrics of the latest `analyzer metrics` of each study.
-- Inputs: none (DDL). Filled by package analysis (analysis_insert_metric), which replaces a
--   study's rows in one transaction.
-- Outputs: table metrics, one row per (study, task, model, condition, metric): n is the cell's
--   counted runs; metric names a CellMetrics field of package metrics as the JSON report spells
--   it, nested names joined by '.', list items by their index or k (e.g. rr, di_tools,
--   success.rate, tokens.median, pass_k.2, divergence.3); value is NULL where the metric is
--   undefined (never NaN); se is the leave-one-run-out jackknife SE of a pairwise metric,
--   estimated and sampling_se say whether it was estimated from sampled pairs.
CREATE TABLE IF NOT EXISTS metrics (
    study       VARCHAR NOT NULL,
    task        VARCHAR NOT NULL,
    model       VARCHAR NOT NULL,
    condition   VARCHAR NOT NULL,
    n           BIGINT  NOT NULL,
    metric      VARCHAR NOT NULL,
    value       DOUBLE,
    se          DOUBLE,
    estimated   BOOLEAN NOT NULL,
    sampling_se DOUBLE
);
