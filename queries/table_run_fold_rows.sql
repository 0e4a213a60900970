-- table_run_fold_rows: the stored rows of run_folds, one per finished run attempt, in a
-- narrower shape that is cheaper for DuckDB to append, commit and checkpoint; the view run_folds
-- presents them as they are queried.
-- Inputs: none (DDL). Filled by the ingester (an appender), rebuilt identically by a replay.
-- Outputs: table run_fold_rows: run_folds' columns in its order, but components, states and
--   tools are JSON arrays of strings (VARCHAR; components NULL when run_folds' is) where
--   run_folds has VARCHAR[], and sig_* are the 32 bytes of each SHA-256 signature (BLOB) where
--   run_folds has their lowercase hex. Three LIST columns and six 64-character strings cost the
--   appender and the COMMIT of every transaction more than the rest of the row together
--   (docs/benchmarks.md, "Narrower run_folds rows").
CREATE TABLE IF NOT EXISTS run_fold_rows (
    study               VARCHAR   NOT NULL,
    run                 VARCHAR   NOT NULL,
    attempt             INTEGER   NOT NULL,
    source_kind         VARCHAR   NOT NULL,
    source_id           VARCHAR   NOT NULL,
    task                VARCHAR,
    model               VARCHAR,
    condition           VARCHAR,
    instance            VARCHAR,
    input_index         INTEGER,
    seed_index          INTEGER,
    seed                BIGINT,
    components          VARCHAR,
    simulated           BOOLEAN,
    status              VARCHAR   NOT NULL,
    success             BOOLEAN   NOT NULL,
    error               VARCHAR,
    started_at          TIMESTAMPTZ,
    finished_at         TIMESTAMPTZ,
    latency_ms          DOUBLE,
    elapsed_ms          DOUBLE,
    prompt_tokens       BIGINT    NOT NULL,
    completion_tokens   BIGINT    NOT NULL,
    tokens              BIGINT    NOT NULL,
    model_calls         INTEGER   NOT NULL,
    tool_calls          INTEGER   NOT NULL,
    retries             INTEGER   NOT NULL,
    plan_reprompts      INTEGER   NOT NULL,
    rejected_tool_calls INTEGER   NOT NULL,
    validations_failed  INTEGER   NOT NULL,
    escalated           BOOLEAN   NOT NULL,
    plan                VARCHAR   NOT NULL,
    states              VARCHAR   NOT NULL,
    tools               VARCHAR   NOT NULL,
    calls               VARCHAR   NOT NULL,
    output              VARCHAR   NOT NULL,
    sig_plan            BLOB      NOT NULL,
    sig_states          BLOB      NOT NULL,
    sig_tools           BLOB      NOT NULL,
    sig_calls           BLOB      NOT NULL,
    sig_output          BLOB      NOT NULL,
    sig_trace           BLOB      NOT NULL,
    events              INTEGER   NOT NULL,
    fold_error          VARCHAR,
    check_error         VARCHAR,
    finished_status     VARCHAR   NOT NULL,
    cause_kind          VARCHAR,
    cause_permanent     BOOLEAN,
    cause               VARCHAR,
    input_key           VARCHAR
);
