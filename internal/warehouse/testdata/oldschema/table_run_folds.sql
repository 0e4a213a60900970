-- table_run_folds: one row per finished run attempt: the events fold (events.Fold) of every event
-- of the attempt, computed by the ingester when run.finished arrives and again whenever a late
-- event of a finished attempt arrives, so the row always folds all stored events of the attempt.
-- Inputs: none (DDL). Filled by the ingester (an appender), rebuilt identically by a replay.
-- Outputs: table run_folds; see the column comments. Lists and JSON are canonical: plan is the
--   canonical accepted plan or the raw last proposed text; calls is the canonical JSON array of
--   {"args":…,"tool":…}; output is canonical JSON or '<none>'. sig_* are the lowercase hex SHA-256
--   signatures of metrics.PlanSignature & co. fold_error is the fold's first error (NULL when the
--   history is well-formed); check_error lists disagreements between run.finished's totals and
--   the fold's. status is run.finished's status (finished_status), except 'incomplete' while the
--   fold refuses the history (a gap, an event it cannot apply): such a run is not scored until
--   its history is whole, and success is then false. cause_kind, cause_permanent and cause are
--   run.finished's cause (errored runs; NULL otherwise); input_key is run.started's input key,
--   else the one derived from its input (events.RunStarted.ResolvedInputKey), NULL when neither.
CREATE TABLE IF NOT EXISTS run_folds (
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
    components          VARCHAR[],
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
    states              VARCHAR[] NOT NULL,
    tools               VARCHAR[] NOT NULL,
    calls               VARCHAR   NOT NULL,
    output              VARCHAR   NOT NULL,
    sig_plan            VARCHAR   NOT NULL,
    sig_states          VARCHAR   NOT NULL,
    sig_tools           VARCHAR   NOT NULL,
    sig_calls           VARCHAR   NOT NULL,
    sig_output          VARCHAR   NOT NULL,
    sig_trace           VARCHAR   NOT NULL,
    events              INTEGER   NOT NULL,
    fold_error          VARCHAR,
    check_error         VARCHAR,
    finished_status     VARCHAR   NOT NULL,
    cause_kind          VARCHAR,
    cause_permanent     BOOLEAN,
    cause               VARCHAR,
    input_key           VARCHAR
);
