-- report_basis: the data a study report stands on.
-- Inputs: $1 study (VARCHAR); tables events and rejected_events.
-- Outputs: one row (events, report_events, first_event_us, last_event_us, rejected_events):
--   events counts the study's stored events other than report.published (the reports' own
--   announcements); first/last_event_us bound their times (microseconds since the epoch, NULL
--   without events); rejected_events counts messages on the study's subjects
--   (ditto.events.<study>.…) that could not be stored as events.
SELECT (SELECT count(*) FROM events WHERE study = $1 AND type <> 'report.published') AS events,
       (SELECT count(*) FROM events WHERE study = $1 AND type = 'report.published') AS report_events,
       (SELECT epoch_us(min(time)) FROM events WHERE study = $1 AND type <> 'report.published') AS first_event_us,
       (SELECT epoch_us(max(time)) FROM events WHERE study = $1 AND type <> 'report.published') AS last_event_us,
       (SELECT count(*) FROM rejected_events WHERE split_part(subject, '.', 3) = $1) AS rejected_events;
