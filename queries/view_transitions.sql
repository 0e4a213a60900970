-- view_transitions: state entries and exits of every run attempt, in order.
-- Inputs: events of type state.entered and state.exited.
-- Outputs: view transitions(study, run, attempt, seq, time, event, state, from_state, outcome,
--   step): event is entered or exited; step numbers the entries of an attempt from 1 (an exit
--   carries the step of its entry).
CREATE OR REPLACE VIEW transitions AS
SELECT study, run, attempt, seq, time,
       substr(type, 7) AS event,
       payload ->> '$.state' AS state,
       payload ->> '$.from' AS from_state,
       payload ->> '$.outcome' AS outcome,
       count(*) FILTER (WHERE type = 'state.entered')
           OVER (PARTITION BY study, run, attempt ORDER BY seq) AS step
FROM events
WHERE type IN ('state.entered', 'state.exited');
