-- ingest_watermark_insert: the first watermark of a stream, in the batch's transaction.
-- Inputs: $1 stream, $2 watermark, $3 events, $4 rejected, $5 duplicates.
-- Outputs: the stream's row of ingest_state (the ingester runs it only when
--   ingest_watermark_set.sql found no row).
INSERT INTO ingest_state VALUES ($1, $2, $3, $4, $5);
