-- analysis_study: the study a metrics report is about.
-- Inputs: $1 study (VARCHAR); events (study.defined, run.started, every event's time). Read
--   directly rather than through the view studies, which folds every study's runs.
-- Outputs: at most one row (study, name, source_kind, paired, expected_runs, last_event_us):
--   name and paired come from the latest study.defined (the study id and false without one);
--   source_kind is the runs' (harness or production; harness without runs); last_event_us is
--   the latest event time of the study in microseconds since the epoch (what a report derives
--   its date from, so that the same events give the same report). No row: no event names the
--   study.
WITH defined AS (
    SELECT arg_max(payload, stream_seq) AS payload
    FROM events
    WHERE study = $1 AND type = 'study.defined'
), seen AS (
    SELECT count(*) AS events,
           min(source_kind) FILTER (WHERE type = 'run.started') AS source_kind,
           epoch_us(max(time)) AS last_event_us
    FROM events
    WHERE study = $1
)
SELECT CAST($1 AS VARCHAR) AS study,
       coalesce(d.payload ->> '$.name', CAST($1 AS VARCHAR)) AS name,
       coalesce(s.source_kind, 'harness') AS source_kind,
       coalesce(CAST(d.payload -> '$.paired' AS BOOLEAN), false) AS paired,
       CAST(d.payload -> '$.expected_runs' AS BIGINT) AS expected_runs,
       s.last_event_us
FROM seen s, defined d
WHERE s.events > 0;
