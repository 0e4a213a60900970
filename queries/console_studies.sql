-- console_studies: every study's progress, as the console's Studies page shows it.
-- Inputs: none (no parameters). Table events (study.defined, run.started, every event's time),
--   table run_folds (finished attempts). It reads the tables rather than the views studies and
--   runs: they parse every run.started payload, which this page, reloaded live, cannot afford.
-- Outputs: rows (study, name, source_kind, expected_runs, runs, finished_runs, succeeded_runs,
--   errored_runs, incomplete_runs, last_event_us), ordered by study. A run is judged by its latest
--   attempt (the highest attempt started): finished_runs counts runs whose latest attempt
--   finished (any status), as the studies view does; errored_runs those that ended errored (the
--   infrastructure failed: counted and shown, never scored); incomplete_runs those not finished;
--   last_event_us is the time of the study's latest event, in microseconds since the epoch.
WITH defined AS (
    SELECT study, arg_max(payload, stream_seq) AS payload
    FROM events
    WHERE type = 'study.defined'
    GROUP BY study
), started AS (
    SELECT study, run, max(attempt) AS attempt, min(source_kind) AS source_kind
    FROM events
    WHERE type = 'run.started'
    GROUP BY study, run
), latest AS (
    SELECT s.study, s.run, s.source_kind, f.status, coalesce(f.success, false) AS success
    FROM started s
    LEFT JOIN run_folds f ON f.study = s.study AND f.run = s.run AND f.attempt = s.attempt
), progress AS (
    SELECT study,
           min(source_kind) AS source_kind,
           count(*) AS runs,
           count(status) AS finished_runs,
           count(*) FILTER (WHERE success) AS succeeded_runs,
           count(*) FILTER (WHERE status = 'errored') AS errored_runs,
           count(*) FILTER (WHERE status IS NULL) AS incomplete_runs
    FROM latest
    GROUP BY study
), last AS (
    SELECT study, epoch_us(max(time)) AS last_event_us
    FROM events
    GROUP BY study
)
SELECT l.study,
       coalesce(d.payload ->> '$.name', l.study) AS name,
       coalesce(p.source_kind, 'harness') AS source_kind,
       CAST(d.payload -> '$.expected_runs' AS BIGINT) AS expected_runs,
       coalesce(p.runs, 0) AS runs,
       coalesce(p.finished_runs, 0) AS finished_runs,
       coalesce(p.succeeded_runs, 0) AS succeeded_runs,
       coalesce(p.errored_runs, 0) AS errored_runs,
       coalesce(p.incomplete_runs, 0) AS incomplete_runs,
       l.last_event_us
FROM last l
LEFT JOIN defined d ON d.study = l.study
LEFT JOIN progress p ON p.study = l.study
ORDER BY l.study;
