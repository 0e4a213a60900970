-- ingest_rejected: keeps one message that could not be stored as an event.
-- Inputs: $1 stream_seq, $2 subject, $3 msg_id, $4 raw bytes, $5 reason, $6 error_class.
-- Outputs: one row appended to rejected_events.
INSERT INTO rejected_events VALUES ($1, $2, $3, $4, $5, $6);
