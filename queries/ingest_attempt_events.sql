-- ingest_attempt_events: the stored history of some run attempts, for the fold when the ingester
-- does not hold it in memory (after a restart, or for a late event of a finished attempt), for
-- more attempts than ingest_attempt_events_few takes (a restart's first batches): a semi join of
-- their strings, which leaves a few KB in DuckDB 1.5.6's heap at each call.
-- Inputs: the attempts as three parallel lists: $1 studies (VARCHAR[]), $2 runs (VARCHAR[]),
--   $3 attempts (INTEGER[]).
-- Outputs: the envelope columns and payload of each event, in no order (the caller sorts each
--   attempt's: an ORDER BY left another 0.4-0.9 KB a call in DuckDB's heap).
WITH k AS (
    SELECT unnest($1::VARCHAR[]) AS study, unnest($2::VARCHAR[]) AS run,
           unnest($3::INTEGER[]) AS attempt
)
SELECT e.study, e.run, e.attempt, e.seq, e.stream_seq, e.id, e.type, e.schema_version, e.time,
       e.source_kind, e.source_id, e.trace_id, e.span_id, e.ignorable,
       CAST(e.payload AS VARCHAR) AS payload
FROM events e
SEMI JOIN k ON e.study = k.study AND e.run = k.run AND e.attempt = k.attempt;
