-- analysis_study: the study a metrics report is about.
-- Inputs: $1 study (VARCHAR); views studies (study.defined and run progress) and events.
-- Outputs: at most one row (study, name, source_kind, paired, expected_runs, last_event_us):
--   source_kind is harness or production; paired says that runs pair across conditions by
--   input_index and seed_index (study.defined's paired, false without a definition);
--   last_event_us is the latest event time of the study in microseconds since the epoch (what a
--   report derives its date from, so that the same events give the same report). No row: the
--   study is unknown.
SELECT s.study,
       s.name,
       s.source_kind,
       s.paired,
       s.expected_runs,
       (SELECT epoch_us(max(e.time)) FROM events e WHERE e.study = $1) AS last_event_us
FROM studies s
WHERE s.study = $1;
