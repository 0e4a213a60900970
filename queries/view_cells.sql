-- view_cells: one row per cell (study, task, model, condition): expected against finished runs,
-- with simple summaries. The determinism metrics themselves are computed by package metrics.
-- Inputs: events of type study.defined (expected runs per cell), runs (latest attempts).
-- Outputs: view cells(study, task, model, condition, expected_runs, runs, finished_runs,
--   scored_runs, errored_runs, aborted_runs, incomplete_runs, succeeded_runs, success_rate,
--   mean_tokens, mean_latency_ms, distinct_traces, fold_errors): finished_runs counts latest
--   attempts with a whole finished history; of those, scored_runs are the agent's behaviour
--   (succeeded, failed, escalated, overflow), errored_runs the infrastructure's failures and
--   aborted_runs interrupted ones; incomplete_runs have no run.finished or a history with a gap
--   (fold_errors of them). success_rate, mean_tokens and mean_latency_ms are over scored runs;
--   distinct_traces counts distinct sig_trace values of scored runs.
CREATE OR REPLACE VIEW cells AS
WITH defined AS (
    SELECT study, arg_max(payload, stream_seq) AS payload
    FROM events
    WHERE type = 'study.defined'
    GROUP BY study
), expected AS (
    SELECT study, c.task, c.model, c.condition, CAST(sum(c.runs) AS BIGINT) AS expected_runs
    FROM (
        SELECT study,
               unnest(from_json(payload -> '$.cells',
                   '[{"task":"VARCHAR","model":"VARCHAR","condition":"VARCHAR","runs":"BIGINT"}]')) AS c
        FROM defined
    )
    GROUP BY ALL
), seen AS (
    SELECT study, task, model, condition,
           count(*) AS runs,
           count(*) FILTER (WHERE status <> 'incomplete') AS finished_runs,
           count(*) FILTER (WHERE scored) AS scored_runs,
           count(*) FILTER (WHERE status = 'errored') AS errored_runs,
           count(*) FILTER (WHERE status = 'aborted') AS aborted_runs,
           count(*) FILTER (WHERE status = 'incomplete') AS incomplete_runs,
           count(*) FILTER (WHERE scored AND success) AS succeeded_runs,
           avg(tokens) FILTER (WHERE scored) AS mean_tokens,
           avg(latency_ms) FILTER (WHERE scored) AS mean_latency_ms,
           count(DISTINCT sig_trace) FILTER (WHERE scored) AS distinct_traces,
           count(fold_error) AS fold_errors
    FROM (SELECT *, status IN ('succeeded', 'failed', 'escalated', 'overflow') AS scored FROM runs)
    WHERE last_attempt
    GROUP BY study, task, model, condition
)
SELECT coalesce(e.study, s.study) AS study,
       coalesce(e.task, s.task) AS task,
       coalesce(e.model, s.model) AS model,
       coalesce(e.condition, s.condition) AS condition,
       e.expected_runs,
       coalesce(s.runs, 0) AS runs,
       coalesce(s.finished_runs, 0) AS finished_runs,
       coalesce(s.scored_runs, 0) AS scored_runs,
       coalesce(s.errored_runs, 0) AS errored_runs,
       coalesce(s.aborted_runs, 0) AS aborted_runs,
       coalesce(s.incomplete_runs, 0) AS incomplete_runs,
       coalesce(s.succeeded_runs, 0) AS succeeded_runs,
       s.succeeded_runs / nullif(s.scored_runs, 0) AS success_rate,
       s.mean_tokens,
       s.mean_latency_ms,
       coalesce(s.distinct_traces, 0) AS distinct_traces,
       coalesce(s.fold_errors, 0) AS fold_errors
FROM expected e
FULL OUTER JOIN seen s
       ON s.study = e.study AND s.task = e.task AND s.model = e.model AND s.condition = e.condition;
