-- console_watermark: the highest stored stream sequence, per study or over all studies: the
-- console recomputes what it caches (a study's metrics, the Studies page's progress) only when it
-- moved.
-- Inputs: $1 study (VARCHAR, NULL for every study). Table events.
-- Outputs: one row (watermark, events): the study's (or the database's) highest stream_seq (0
--   without events) and its event count.
SELECT coalesce(max(stream_seq), 0) AS watermark, count(*) AS events
FROM events
WHERE CAST($1 AS VARCHAR) IS NULL OR study = CAST($1 AS VARCHAR);
