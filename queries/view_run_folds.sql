-- view_run_folds: one row per finished run attempt: the events fold (events.Fold) of every event
-- of the attempt, computed by the ingester when run.finished arrives and again whenever a late
-- event of a finished attempt arrives, so the row always folds all stored events of the attempt.
-- Inputs: run_fold_rows, the stored rows (filled by the ingester, rebuilt identically by a
--   replay), which keep the lists as JSON text and the signatures as bytes.
-- Outputs: view run_folds. Lists and JSON are canonical: plan is the
--   canonical accepted plan or the raw last proposed text; calls is the canonical JSON array of
--   {"args":…,"tool":…}; output is canonical JSON or '<none>'. sig_* are the lowercase hex SHA-256
--   signatures of metrics.PlanSignature & co. fold_error is the fold's first error (NULL when the
--   history is well-formed); check_error lists disagreements between run.finished's totals and
--   the fold's. status is run.finished's status (finished_status), except 'incomplete' while the
--   fold refuses the history (a gap, an event it cannot apply): such a run is not scored until
--   its history is whole, and success is then false. cause_kind, cause_permanent and cause are
--   run.finished's cause (errored runs; NULL otherwise); input_key is run.started's input key,
--   else the one derived from its input (events.RunStarted.ResolvedInputKey), NULL when neither.
CREATE OR REPLACE VIEW run_folds AS
SELECT study, run, attempt, source_kind, source_id, task, model, condition, instance,
       input_index, seed_index, seed,
       from_json(components, '["VARCHAR"]') AS components,
       simulated, status, success, error, started_at, finished_at, latency_ms, elapsed_ms,
       prompt_tokens, completion_tokens, tokens, model_calls, tool_calls, retries, plan_reprompts,
       rejected_tool_calls, validations_failed, escalated, plan,
       from_json(states, '["VARCHAR"]') AS states,
       from_json(tools, '["VARCHAR"]') AS tools,
       calls, output,
       lower(hex(sig_plan)) AS sig_plan, lower(hex(sig_states)) AS sig_states,
       lower(hex(sig_tools)) AS sig_tools, lower(hex(sig_calls)) AS sig_calls,
       lower(hex(sig_output)) AS sig_output, lower(hex(sig_trace)) AS sig_trace,
       events, fold_error, check_error, finished_status, cause_kind, cause_permanent, cause,
       input_key
FROM run_fold_rows;
