-- migrate_run_folds_copy: moves the rows of a run_folds table, as builds before run_fold_rows
-- stored them, into run_fold_rows, in the same transaction as migrate_run_folds_drop.
-- Inputs: table run_folds with its lists as VARCHAR[] and its signatures as lowercase hex;
--   table run_fold_rows (created, empty).
-- Outputs: rows inserted into run_fold_rows: the same values, the lists as JSON arrays of
--   strings and the signatures as their bytes, as the view run_folds reads them back.
INSERT INTO run_fold_rows
SELECT study, run, attempt, source_kind, source_id, task, model, condition, instance,
       input_index, seed_index, seed, to_json(components)::VARCHAR,
       simulated, status, success, error, started_at, finished_at, latency_ms, elapsed_ms,
       prompt_tokens, completion_tokens, tokens, model_calls, tool_calls, retries, plan_reprompts,
       rejected_tool_calls, validations_failed, escalated, plan,
       to_json(states)::VARCHAR, to_json(tools)::VARCHAR, calls, output,
       unhex(sig_plan), unhex(sig_states), unhex(sig_tools), unhex(sig_calls), unhex(sig_output),
       unhex(sig_trace),
       events, fold_error, check_error, finished_status, cause_kind, cause_permanent, cause,
       input_key
FROM run_folds;
