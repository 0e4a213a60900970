-- ingest_watermark_set: advances the watermark and the counters, in the batch's transaction.
-- Inputs: $1 stream, $2 new watermark, $3 events added, $4 rejected added, $5 duplicates added.
-- Outputs: the stream's row of ingest_state, inserted or updated.
INSERT INTO ingest_state VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (stream) DO UPDATE SET
    watermark  = excluded.watermark,
    events     = ingest_state.events + excluded.events,
    rejected   = ingest_state.rejected + excluded.rejected,
    duplicates = ingest_state.duplicates + excluded.duplicates;
