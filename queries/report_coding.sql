-- report_coding: the coding figures of a study's counted coding runs (last attempts that
--   finished as agent behaviour: succeeded, failed, escalated or overflow), for the report's
--   coding section.
-- Inputs: $1 study.
-- Outputs: one row per run: task, model, condition, seed_index, success, tokens, latency_ms,
--   turns, verifications, patch_turns, repair_turns, verification_ms, files_changed, repatches,
--   protected_attempts, test_files_changed, raw_bytes, distilled_bytes, tests_pass; ordered by
--   task, model, condition, seed_index.
SELECT task, model, condition, seed_index, success, tokens, latency_ms, turns, verifications, patch_turns,
       repair_turns, verification_ms, files_changed, repatches, protected_attempts, test_files_changed,
       raw_bytes, distilled_bytes, coalesce(tests_pass, false) AS tests_pass
FROM coding_runs
WHERE study = $1 AND last_attempt AND status IN ('succeeded', 'failed', 'escalated', 'overflow')
ORDER BY task, model, condition, seed_index;
