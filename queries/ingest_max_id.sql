-- ingest_max_id: the largest event id stored. An id above it cannot be stored yet, so the
-- ingester checks only the ids of a batch at or below it with ingest_existing_ids.sql.
-- Inputs: events.
-- Outputs: max_id ('' when events is empty).
SELECT coalesce(max(id), '') AS max_id FROM events;
