-- view_coding_runs: one row per run attempt of a coding run (one with a workspace.created
--   event): the runs view's identity, status and totals, and the coding figures folded from its
--   events.
-- Inputs: runs (view), events.
-- Outputs: view coding_runs(study, run, attempt, last_attempt, task, model, condition,
--   seed_index, status, success, tokens, latency_ms, repo, instance, turns (the agent's model
--   calls: a summarization call of context management, purpose summarize, is not a turn),
--   verifications, patch_turns (verifications after a patch), repair_turns (patch turns after
--   the first), verification_ms, files_changed, repatches (changes of a file already changed),
--   protected_attempts (test-file writes refused or reverted), test_files_changed (test-file
--   changes that stayed: protection off), raw_bytes and distilled_bytes (of the diagnostics),
--   tests_pass (the last verification's tests passed)).
CREATE OR REPLACE VIEW coding_runs AS
WITH coding AS (
    SELECT study, run, attempt,
           any_value(json_extract_string(payload, '$.repo')) FILTER (WHERE type = 'workspace.created') AS repo,
           any_value(json_extract_string(payload, '$.instance')) FILTER (WHERE type = 'workspace.created') AS instance,
           count(*) FILTER (WHERE type = 'model.called'
                              AND coalesce(json_extract_string(payload, '$.purpose'), '') <> 'summarize') AS turns,
           count(*) FILTER (WHERE type = 'verification.ran') AS verifications,
           count(*) FILTER (WHERE type = 'verification.ran' AND TRY_CAST(json_extract(payload, '$.turn') AS INTEGER) > 0) AS patch_turns,
           coalesce(sum(TRY_CAST(json_extract(payload, '$.duration_ms') AS DOUBLE)) FILTER (WHERE type = 'verification.ran'), 0) AS verification_ms,
           count(*) FILTER (WHERE type = 'file.changed') AS files_changed,
           count(*) FILTER (WHERE type = 'file.changed' AND coalesce(TRY_CAST(json_extract(payload, '$.repatch') AS BOOLEAN), false)) AS repatches,
           count(*) FILTER (WHERE (type = 'tool.rejected' AND json_extract_string(payload, '$.reason') = 'test-protected')
                              OR (type = 'file.changed' AND coalesce(TRY_CAST(json_extract(payload, '$.protected') AS BOOLEAN), false)
                                  AND coalesce(TRY_CAST(json_extract(payload, '$.reverted') AS BOOLEAN), false))) AS protected_attempts,
           count(*) FILTER (WHERE type = 'file.changed' AND coalesce(TRY_CAST(json_extract(payload, '$.protected') AS BOOLEAN), false)
                              AND NOT coalesce(TRY_CAST(json_extract(payload, '$.reverted') AS BOOLEAN), false)) AS test_files_changed,
           CAST(coalesce(sum(TRY_CAST(json_extract(payload, '$.raw_bytes') AS BIGINT)) FILTER (WHERE type = 'diagnostics.distilled'), 0) AS BIGINT) AS raw_bytes,
           CAST(coalesce(sum(TRY_CAST(json_extract(payload, '$.distilled_bytes') AS BIGINT)) FILTER (WHERE type = 'diagnostics.distilled'), 0) AS BIGINT) AS distilled_bytes,
           arg_max(TRY_CAST(json_extract(payload, '$.tests_pass') AS BOOLEAN), seq) FILTER (WHERE type = 'verification.ran') AS tests_pass
    FROM events
    WHERE type IN ('workspace.created', 'model.called', 'verification.ran', 'file.changed', 'tool.rejected', 'diagnostics.distilled')
    GROUP BY study, run, attempt
    HAVING count(*) FILTER (WHERE type = 'workspace.created') > 0
)
SELECT r.study, r.run, r.attempt, r.last_attempt, r.task, r.model, r.condition, r.seed_index, r.status, r.success,
       r.tokens, r.latency_ms, c.repo, c.instance, c.turns, c.verifications, c.patch_turns,
       greatest(c.patch_turns - 1, 0) AS repair_turns, c.verification_ms, c.files_changed, c.repatches,
       c.protected_attempts, c.test_files_changed, c.raw_bytes, c.distilled_bytes, c.tests_pass
FROM runs r
JOIN coding c ON c.study = r.study AND c.run = r.run AND c.attempt = r.attempt;
