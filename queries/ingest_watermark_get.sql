-- ingest_watermark_get: where ingestion of a stream stands.
-- Inputs: $1 the stream name.
-- Outputs: watermark, events, rejected, duplicates (no row before the first commit).
SELECT watermark, events, rejected, duplicates FROM ingest_state WHERE stream = $1;
