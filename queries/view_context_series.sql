-- view_context_series: one row per request of a context-managed run, in turn order: the size of
--   the context the model was sent, turn by turn, and what context management did before it.
-- Inputs: events (context.prepared, context.overflowed, context.elided, context.summarized).
-- Outputs: view context_series(study, run, attempt, turn, tokens, budget, fits, messages, recent,
--   elided, tokens_saved, summarized). tokens is the request's estimated size (messages, tools
--   offered, appended plan, completion reserved); fits is false for the request that overflowed
--   the budget (then tokens is what it needed, and the run ended there). elided counts the
--   observations and tool-call arguments replaced by stubs before the request, tokens_saved what
--   the stubs saved, summarized the summarization calls.
--   Join runs on (study, run, attempt) for the task, model, condition and tier.
CREATE OR REPLACE VIEW context_series AS
WITH requests AS (
    SELECT study, run, attempt, seq,
           TRY_CAST(json_extract(payload, '$.turn') AS INTEGER) AS turn,
           CASE WHEN type = 'context.prepared' THEN TRY_CAST(json_extract(payload, '$.tokens') AS INTEGER)
                ELSE TRY_CAST(json_extract(payload, '$.needed') AS INTEGER) END AS tokens,
           TRY_CAST(json_extract(payload, '$.budget') AS INTEGER) AS budget,
           type = 'context.prepared' AS fits,
           TRY_CAST(json_extract(payload, '$.messages') AS INTEGER) AS messages,
           TRY_CAST(json_extract(payload, '$.recent') AS INTEGER) AS recent
    FROM events
    WHERE type IN ('context.prepared', 'context.overflowed')
), acts AS (
    SELECT study, run, attempt,
           TRY_CAST(json_extract(payload, '$.turn') AS INTEGER) AS turn,
           CAST(coalesce(sum(json_array_length(json_extract(payload, '$.ids'))
                             + coalesce(json_array_length(json_extract(payload, '$.arguments')), 0)) FILTER (WHERE type = 'context.elided'), 0) AS BIGINT) AS elided,
           CAST(coalesce(sum(TRY_CAST(json_extract(payload, '$.tokens_saved') AS INTEGER)) FILTER (WHERE type = 'context.elided'), 0) AS BIGINT) AS tokens_saved,
           count(*) FILTER (WHERE type = 'context.summarized') AS summarized
    FROM events
    WHERE type IN ('context.elided', 'context.summarized')
    GROUP BY ALL
)
SELECT r.study, r.run, r.attempt, r.turn, r.tokens, r.budget, r.fits, r.messages, r.recent,
       coalesce(a.elided, 0) AS elided, coalesce(a.tokens_saved, 0) AS tokens_saved,
       coalesce(a.summarized, 0) AS summarized
FROM requests r
LEFT JOIN acts a ON a.study = r.study AND a.run = r.run AND a.attempt = r.attempt AND a.turn = r.turn
ORDER BY r.study, r.run, r.attempt, r.seq;
