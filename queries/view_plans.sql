-- view_plans: every plan event: proposals, acceptances and rejections.
-- Inputs: events of type plan.proposed, plan.accepted, plan.rejected.
-- Outputs: view plans(study, run, attempt, seq, time, kind, plan_attempt, structured, text, steps,
--   errors): kind is proposed, accepted or rejected; text is the proposed raw text; steps the
--   accepted canonical [{state, tool}] list (JSON); errors the rejection's errors (JSON array).
CREATE OR REPLACE VIEW plans AS
SELECT study, run, attempt, seq, time,
       substr(type, 6) AS kind,
       CAST(payload -> '$.attempt' AS INTEGER) AS plan_attempt,
       CAST(payload -> '$.structured' AS BOOLEAN) AS structured,
       payload ->> '$.text' AS text,
       payload -> '$.steps' AS steps,
       payload -> '$.errors' AS errors
FROM events
WHERE type IN ('plan.proposed', 'plan.accepted', 'plan.rejected');
