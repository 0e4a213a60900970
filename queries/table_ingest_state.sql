-- table_ingest_state: how far ingestion has got, committed in the same transaction as the rows.
-- Inputs: none (DDL). Written by ingest_watermark_set.sql, read by ingest_watermark_get.sql.
-- Outputs: table ingest_state(stream, watermark, events, rejected, duplicates): watermark is the
--   stream sequence at and below which every message is stored (as an event, a rejected event or
--   a skipped duplicate); the counters are totals over the database's life.
CREATE TABLE IF NOT EXISTS ingest_state (
    stream     VARCHAR PRIMARY KEY,
    watermark  BIGINT  NOT NULL,
    events     BIGINT  NOT NULL,
    rejected   BIGINT  NOT NULL,
    duplicates BIGINT  NOT NULL
);
