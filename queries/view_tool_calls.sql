-- view_tool_calls: every tool call an agent made: executed calls with their result, and calls the
-- harness rejected before any side effect.
-- Inputs: events of type tool.called, tool.returned, tool.rejected.
-- Outputs: view tool_calls(study, run, attempt, seq, time, call_id, tool, state, args, status,
--   reason, detail, ok, result, error, duration_ms, returned_seq, server_name, server_version):
--   status is executed or rejected; args and result are canonical JSON; ok/result/error/duration_ms
--   come from tool.returned (NULL while the call has not returned); server_name and server_version
--   name the server that served an executed call as it introduced itself (an MCP server's
--   implementation name and version; schema version 3), NULL for a tool run in process.
CREATE OR REPLACE VIEW tool_calls AS
WITH returned AS (
    SELECT study, run, attempt, seq, payload ->> '$.call_id' AS call_id, payload
    FROM events WHERE type = 'tool.returned'
)
SELECT c.study, c.run, c.attempt, c.seq, c.time,
       c.payload ->> '$.call_id' AS call_id,
       c.payload ->> '$.tool' AS tool,
       c.payload ->> '$.state' AS state,
       CAST(c.payload -> '$.args' AS VARCHAR) AS args,
       CASE c.type WHEN 'tool.called' THEN 'executed' ELSE 'rejected' END AS status,
       c.payload ->> '$.reason' AS reason,
       c.payload ->> '$.detail' AS detail,
       CAST(r.payload -> '$.ok' AS BOOLEAN) AS ok,
       CAST(r.payload -> '$.output' AS VARCHAR) AS result,
       r.payload ->> '$.error' AS error,
       CAST(r.payload -> '$.duration_ms' AS DOUBLE) AS duration_ms,
       r.seq AS returned_seq,
       c.payload ->> '$.server.name' AS server_name,
       c.payload ->> '$.server.version' AS server_version
FROM events c
LEFT JOIN returned r
       ON c.type = 'tool.called'
      AND r.study = c.study AND r.run = c.run AND r.attempt = c.attempt
      AND r.call_id = (c.payload ->> '$.call_id')
WHERE c.type IN ('tool.called', 'tool.rejected');
