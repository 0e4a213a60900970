-- view_plans: every plan event: proposals, acceptances and rejections.
-- Inputs: events of type plan.proposed, plan.accepted, plan.rejected.
-- Outputs: view plans(study, run, attempt, seq, time, kind, plan_attempt, structured, text, steps,
--   errors): kind is proposed, accepted or rejected; text is the proposed raw text; steps the
--   accepted canonical [{state, tool}] list (JSON); errors the rejection's errors (JSON array).
CREATE OR REPLACE VIEW plans AS
SELECT study, run, attempt, seq, time,
       substr(type, 6) AS kind,
       -- Each member is read only from the types that have it: a member of that name in another
       -- type's payload is the producer's own, never validated, and a value the cast cannot
       -- take (an attempt beyond INTEGER, a string for structured) would fail every query that
       -- reads the column.
       CASE WHEN type <> 'plan.accepted' THEN CAST(payload -> '$.attempt' AS INTEGER) END AS plan_attempt,
       CASE WHEN type = 'plan.proposed' THEN CAST(payload -> '$.structured' AS BOOLEAN) END AS structured,
       payload ->> '$.text' AS text,
       payload -> '$.steps' AS steps,
       payload -> '$.errors' AS errors
FROM events
WHERE type IN ('plan.proposed', 'plan.accepted', 'plan.rejected');
