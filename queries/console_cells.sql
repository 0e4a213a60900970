-- console_cells: a study's cells with their run counts, shown on the Study page while its
-- metrics are being computed.
-- Inputs: $1 study (VARCHAR). View cells.
-- Outputs: rows (task, model, condition, expected_runs, runs, finished_runs, incomplete_runs,
--   succeeded_runs, success_rate, mean_tokens, mean_latency_ms, distinct_traces), ordered by task,
--   model, condition.
SELECT task, model, condition, expected_runs, runs, finished_runs, incomplete_runs, succeeded_runs,
       success_rate, mean_tokens, mean_latency_ms, distinct_traces
FROM cells
WHERE study = $1
ORDER BY task, model, condition;
