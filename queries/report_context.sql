-- report_context: the context-management figures of a study's scored context-managed runs (last
--   attempts that finished as agent behaviour: succeeded, failed, escalated or overflow), for the
--   report's context section.
-- Inputs: $1 study.
-- Outputs: one row per run: task, model, condition, seed_index, success, overflow (status
--   overflow), tokens, context_tier, context_budget, peak_context, elisions, recalls, summaries,
--   turns (the agent's model calls; summarization calls apart), repatches (changes of a file
--   already changed), input_index, components (sorted, as run.started recorded them); ordered by
--   task, model, condition, input_index, seed_index.
WITH acts AS (
    SELECT study, run, attempt,
           count(*) FILTER (WHERE type = 'model.called'
                            AND coalesce(json_extract_string(payload, '$.purpose'), '') <> 'summarize') AS turns,
           count(*) FILTER (WHERE type = 'file.changed'
                            AND coalesce(TRY_CAST(json_extract(payload, '$.repatch') AS BOOLEAN), false)) AS repatches
    FROM events
    WHERE study = $1 AND type IN ('model.called', 'file.changed')
    GROUP BY study, run, attempt
)
SELECT r.task, r.model, r.condition, r.seed_index, r.success, r.status = 'overflow' AS overflow, r.tokens,
       r.context_tier, r.context_budget, coalesce(r.peak_context, 0) AS peak_context, r.elisions, r.recalls,
       r.summaries, coalesce(a.turns, 0) AS turns, coalesce(a.repatches, 0) AS repatches,
       coalesce(r.input_index, 0) AS input_index, r.components
FROM runs r
LEFT JOIN acts a ON a.study = r.study AND a.run = r.run AND a.attempt = r.attempt
WHERE r.study = $1 AND r.last_attempt AND r.status IN ('succeeded', 'failed', 'escalated', 'overflow')
  AND r.context_tier IS NOT NULL
ORDER BY r.task, r.model, r.condition, input_index, r.seed_index;
