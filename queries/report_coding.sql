-- report_coding: the coding figures of a study's counted coding runs (last attempts that
--   finished as agent behaviour: succeeded, failed, escalated or overflow), for the report's
--   coding section.
-- Inputs: $1 study.
-- Outputs: one row per run: task, model, condition, seed_index, success, tokens, latency_ms,
--   turns, verifications, patch_turns, repair_turns, verification_ms, files_changed, repatches,
--   protected_attempts, test_files_changed, raw_bytes, distilled_bytes, tests_pass, and what
--   pairs runs across conditions: input_index, components (sorted, as run.started recorded
--   them), context_tier and context_budget (NULL when the context is not managed); ordered by
--   task, model, condition, input_index, seed_index.
SELECT c.task, c.model, c.condition, c.seed_index, c.success, c.tokens, c.latency_ms, c.turns, c.verifications,
       c.patch_turns, c.repair_turns, c.verification_ms, c.files_changed, c.repatches, c.protected_attempts,
       c.test_files_changed, c.raw_bytes, c.distilled_bytes, coalesce(c.tests_pass, false) AS tests_pass,
       coalesce(r.input_index, 0) AS input_index, r.components, r.context_tier, r.context_budget
FROM coding_runs c
JOIN runs r ON r.study = c.study AND r.run = c.run AND r.attempt = c.attempt
WHERE c.study = $1 AND c.last_attempt AND c.status IN ('succeeded', 'failed', 'escalated', 'overflow')
ORDER BY c.task, c.model, c.condition, input_index, c.seed_index;
