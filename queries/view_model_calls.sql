-- view_model_calls: every call to a model.
-- Inputs: events of type model.called.
-- Outputs: view model_calls(study, run, attempt, seq, time, model, purpose, prompt_tokens,
--   completion_tokens, tokens, latency_ms, finish_reason, fingerprint, seed, transport_retries,
--   error, response_model, temperature, top_p, tool_call_ids, input, output). The last six are
--   what production traces record of a call (NULL for harness calls): the model the provider says
--   answered, the sampling parameters sent, the ids of the tool calls asked for (VARCHAR[]), and
--   the messages sent and the choices returned (canonical JSON, when the instrumentation records
--   content).
CREATE OR REPLACE VIEW model_calls AS
SELECT study, run, attempt, seq, time,
       payload ->> '$.model' AS model,
       payload ->> '$.purpose' AS purpose,
       CAST(payload -> '$.prompt_tokens' AS BIGINT) AS prompt_tokens,
       CAST(payload -> '$.completion_tokens' AS BIGINT) AS completion_tokens,
       CAST(payload -> '$.prompt_tokens' AS BIGINT)
           + CAST(payload -> '$.completion_tokens' AS BIGINT) AS tokens,
       CAST(payload -> '$.latency_ms' AS DOUBLE) AS latency_ms,
       payload ->> '$.finish_reason' AS finish_reason,
       payload ->> '$.fingerprint' AS fingerprint,
       CAST(payload -> '$.seed' AS BIGINT) AS seed,
       coalesce(CAST(payload -> '$.transport_retries' AS INTEGER), 0) AS transport_retries,
       payload ->> '$.error' AS error,
       payload ->> '$.response_model' AS response_model,
       CAST(payload -> '$.temperature' AS DOUBLE) AS temperature,
       CAST(payload -> '$.top_p' AS DOUBLE) AS top_p,
       CAST(payload -> '$.tool_call_ids' AS VARCHAR[]) AS tool_call_ids,
       CAST(payload -> '$.input' AS VARCHAR) AS input,
       CAST(payload -> '$.output' AS VARCHAR) AS output
FROM events
WHERE type = 'model.called';
