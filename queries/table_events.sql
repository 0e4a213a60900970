-- table_events: every accepted event, one row per event id, as stored on DITTO_EVENTS.
-- Inputs: none (DDL). Filled by ingest_events.sql from Arrow record batches.
-- Outputs: table events(stream_seq, id, type, schema_version, time, study, run, attempt, seq,
--   source_kind, source_id, trace_id, span_id, ignorable, payload). payload is the event's typed
--   payload as JSON; study-level events have run '_study' and seq 0.
-- No primary key: the ingester keeps ids unique (stream-sequence watermark + id anti-join), because
-- an ART index makes appends several times slower (see internal/warehouse/doc.go).
CREATE TABLE IF NOT EXISTS events (
    stream_seq     BIGINT      NOT NULL,
    id             VARCHAR     NOT NULL,
    type           VARCHAR     NOT NULL,
    schema_version INTEGER     NOT NULL,
    time           TIMESTAMPTZ NOT NULL,
    study          VARCHAR     NOT NULL,
    run            VARCHAR     NOT NULL,
    attempt        INTEGER     NOT NULL,
    seq            BIGINT      NOT NULL,
    source_kind    VARCHAR     NOT NULL,
    source_id      VARCHAR     NOT NULL,
    trace_id       VARCHAR,
    span_id        VARCHAR,
    ignorable      BOOLEAN     NOT NULL,
    payload        JSON        NOT NULL
);
