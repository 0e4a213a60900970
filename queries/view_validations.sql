-- view_validations: every output validation of a state.
-- Inputs: events of type output.validated and output.invalid.
-- Outputs: view validations(study, run, attempt, seq, time, state, tool, valid, errors): errors
--   is the validator's JSON array of messages (NULL when valid).
CREATE OR REPLACE VIEW validations AS
SELECT study, run, attempt, seq, time,
       payload ->> '$.state' AS state,
       payload ->> '$.tool' AS tool,
       type = 'output.validated' AS valid,
       payload -> '$.errors' AS errors
FROM events
WHERE type IN ('output.validated', 'output.invalid');
