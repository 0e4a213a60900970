-- ingest_existing_ids_few: ingest_existing_ids for a batch with few ids at or below the largest
-- stored one (a batch of a trickle of events). The same answer without a join: each row of the
-- id range is tested against the list. A join builds a hash table on every call, and DuckDB's
-- buffer manager keeps the handles of its short-lived blocks in memory for good (4.6–6.0 KB a
-- call, BenchmarkExistingIDs); the test against the list allocates no block (0.2–0.3 KB).
-- Inputs: $1 and $2 the smallest and largest id of the batch's candidates, $3 the candidates
--   (VARCHAR[], at most a few dozen: the test costs the list's length per row in the range).
-- Outputs: id.
SELECT e.id
FROM events e
WHERE e.id BETWEEN $1 AND $2
  AND list_contains($3::VARCHAR[], e.id);
