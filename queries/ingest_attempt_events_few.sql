-- ingest_attempt_events_few: ingest_attempt_events for a few attempts (at most a few dozen: the
-- test costs the lists' length per row in the range), without a join. A semi join of the
-- attempts' strings left 3-9 KB a call (of 10 to 64 attempts) in DuckDB 1.5.6's heap for good,
-- and an ORDER BY 0.4-0.9 KB; the tests against the lists, 0.05 KB or less (docs/benchmarks.md,
-- thirty-sixth session). The caller sorts each attempt's events as the fold wants them.
-- Inputs: $1 the attempts' runs (VARCHAR[]); $2 the attempts as 'study.run.attempt' (VARCHAR[]:
--   study and run are subject tokens, without dots); $3 and $4 the smallest and largest run,
--   which let DuckDB skip the row groups whose runs all lie outside when run ids sort by time
--   (ids that ditto's clients generate do; a study's '<cell>-<index>' do not, and then the
--   range may span most of the table).
-- Outputs: the envelope columns and payload of each event, in no order.
SELECT e.study, e.run, e.attempt, e.seq, e.stream_seq, e.id, e.type, e.schema_version, e.time,
       e.source_kind, e.source_id, e.trace_id, e.span_id, e.ignorable,
       CAST(e.payload AS VARCHAR) AS payload
FROM events e
WHERE e.run BETWEEN $3 AND $4
  AND list_contains($1::VARCHAR[], e.run)
  AND list_contains($2::VARCHAR[], e.study || '.' || e.run || '.' || CAST(e.attempt AS VARCHAR));
