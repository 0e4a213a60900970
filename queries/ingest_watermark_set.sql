-- ingest_watermark_set: advances the watermark and the counters, in the batch's transaction.
-- Inputs: $1 stream, $2 new watermark, $3 events added, $4 rejected added, $5 duplicates added.
-- Outputs: the stream's row of ingest_state updated; no row changed when the stream has none yet
--   (the ingester then runs ingest_watermark_insert.sql). An UPDATE of the one row costs a
--   tenth of an INSERT … ON CONFLICT DO UPDATE (about 1.5 ms against 13 ms a batch, with the
--   batch's rows in the same transaction: BenchmarkStore).
UPDATE ingest_state SET
    watermark  = $2,
    events     = events + $3,
    rejected   = rejected + $4,
    duplicates = duplicates + $5
WHERE stream = $1;
