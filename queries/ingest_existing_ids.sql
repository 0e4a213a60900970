-- ingest_existing_ids: the ids of a batch that are already stored: events re-sent after the
-- broker's duplicate window (e.g. a trace file imported twice a week apart).
-- Inputs: $1 and $2 the smallest and largest id of the batch, $3 the batch's ids (VARCHAR[]).
--   The range lets DuckDB skip row groups by their min/max statistics: ids sort by time, so the
--   probe reads only the part of events whose ids overlap the batch's.
-- Outputs: id.
SELECT e.id
FROM events e
WHERE e.id BETWEEN $1 AND $2
  AND e.id IN (SELECT unnest($3::VARCHAR[]));
