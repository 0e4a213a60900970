-- migrate_run_fold_rows_view: presents a run_folds table, as builds before run_fold_rows stored
-- it, as run_fold_rows, on one connection of a database opened read-only before an ingesting
-- process migrated it (migrate_run_folds_copy does that, and writes). The analysis statements
-- read run_fold_rows itself (the signatures as bytes, the lists as JSON text), so that such a
-- database still reads as it is.
-- Inputs: table run_folds with its lists as VARCHAR[] and its signatures as lowercase hex (run
--   only when ingest_schema_check finds that table, with input_key).
-- Outputs: temporary view run_fold_rows (this connection's): the table's values in
--   run_fold_rows' columns and shape, as migrate_run_folds_copy would store them.
CREATE TEMP VIEW run_fold_rows AS
SELECT study, run, attempt, source_kind, source_id, task, model, condition, instance,
       input_index, seed_index, seed, to_json(components)::VARCHAR AS components,
       simulated, status, success, error, started_at, finished_at, latency_ms, elapsed_ms,
       prompt_tokens, completion_tokens, tokens, model_calls, tool_calls, retries, plan_reprompts,
       rejected_tool_calls, validations_failed, escalated, plan,
       to_json(states)::VARCHAR AS states, to_json(tools)::VARCHAR AS tools, calls, output,
       unhex(sig_plan) AS sig_plan, unhex(sig_states) AS sig_states, unhex(sig_tools) AS sig_tools,
       unhex(sig_calls) AS sig_calls, unhex(sig_output) AS sig_output, unhex(sig_trace) AS sig_trace,
       events, fold_error, check_error, finished_status, cause_kind, cause_permanent, cause,
       input_key
FROM main.run_folds;
