-- console_run_events: the events of one run attempt in order, for the Run page's timeline.
-- Inputs: $1 study, $2 run (VARCHAR), $3 attempt (INTEGER). Table events.
-- Outputs: rows (seq, time_us, type, schema_version, id, source_kind, source_id, payload), ordered
--   by seq; payload is the event's payload as JSON text; time_us is the event's
--   time in microseconds since the epoch.
SELECT seq, epoch_us(time) AS time_us, type, schema_version, id, source_kind, source_id, CAST(payload AS VARCHAR) AS payload
FROM events
WHERE study = $1 AND run = $2 AND attempt = $3
ORDER BY seq;
