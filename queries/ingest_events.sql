-- ingest_events: stores one batch of decoded events.
-- Inputs: ingest_batch, an Arrow record batch registered as a view by the ingester, with the
--   columns of table events; the ingester has already removed ids stored before (see
--   ingest_existing_ids.sql) and ids repeated inside the batch.
-- Outputs: rows appended to events.
INSERT INTO events BY NAME SELECT * FROM ingest_batch;
