-- analysis_table_comparisons: the comparisons of the latest `analyzer metrics` of each study.
-- Inputs: none (DDL). Filled by package analysis (analysis_insert_comparison), which replaces a
--   study's rows in one transaction.
-- Outputs: table comparisons, one row per test: within (study, task, model), condition_b
--   against the reference condition_a; quantity (success, rr, di, tss, ac, tokens, latency_ms),
--   the values in each cell, difference = value_b - value_a, test (fisher_exact, mcnemar_exact,
--   permutation, mann_whitney_u) and method, statistic, effect_size (Cliff's delta), p,
--   p_adjusted (Benjamini-Hochberg across every comparison of the study's report), significant
--   (p_adjusted < 0.05), note, reason (why p is NULL), and p_se: the Monte Carlo standard error
--   of p when p is estimated from random relabellings (a permutation test not using the normal
--   approximation), NULL otherwise. p_se comes last: analysis_add_p_se adds it to a table
--   created before it existed, and the columns are in the same order either way.
CREATE TABLE IF NOT EXISTS comparisons (
    study       VARCHAR NOT NULL,
    task        VARCHAR NOT NULL,
    model       VARCHAR NOT NULL,
    condition_a VARCHAR NOT NULL,
    condition_b VARCHAR NOT NULL,
    quantity    VARCHAR NOT NULL,
    test        VARCHAR NOT NULL,
    method      VARCHAR,
    n_a         BIGINT  NOT NULL,
    n_b         BIGINT  NOT NULL,
    value_a     DOUBLE,
    value_b     DOUBLE,
    difference  DOUBLE,
    statistic   DOUBLE,
    effect_size DOUBLE,
    p           DOUBLE,
    p_adjusted  DOUBLE,
    significant BOOLEAN NOT NULL,
    note        VARCHAR,
    reason      VARCHAR,
    p_se        DOUBLE
);
