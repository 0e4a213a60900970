-- view_model_calls: every call to a model.
-- Inputs: events of type model.called.
-- Outputs: view model_calls(study, run, attempt, seq, time, model, purpose, prompt_tokens,
--   completion_tokens, tokens, latency_ms, finish_reason, fingerprint, seed, transport_retries,
--   error).
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
       payload ->> '$.error' AS error
FROM events
WHERE type = 'model.called';
