-- table_rejected_events: messages of DITTO_EVENTS that could not be stored as events.
-- Inputs: none (DDL). Filled by ingest_rejected.sql.
-- Outputs: table rejected_events(stream_seq, subject, msg_id, raw, reason, error_class).
--   raw is the message body exactly as received; reason says why (the decoder's error, or
--   DuckDB's); error_class is one of malformed, invalid, unknown_type, unknown_version,
--   too_large, subject_mismatch, unstorable (valid, and DuckDB refused to store it). subject
--   and msg_id are as received, with any byte that is not UTF-8 written as \xNN.
CREATE TABLE IF NOT EXISTS rejected_events (
    stream_seq  BIGINT  NOT NULL,
    subject     VARCHAR NOT NULL,
    msg_id      VARCHAR,
    raw         BLOB    NOT NULL,
    reason      VARCHAR NOT NULL,
    error_class VARCHAR NOT NULL
);
