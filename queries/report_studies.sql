-- report_studies: every study with its kind and latest event, for scheduled reports.
-- Inputs: table events.
-- Outputs: rows (study, source_kind, last_event_us, last_seq), ordered by study: source_kind is
--   production when any run event of the study came from production, harness otherwise;
--   last_event_us is the time of its latest event other than report.published (microseconds
--   since the epoch), so that announcing a report does not make a study look active; last_seq
--   is the highest stream sequence of those events: an event stored after a report has a
--   higher one whatever its time says (a back-fill, a re-send, a late import).
SELECT study,
       CASE WHEN bool_or(source_kind = 'production') THEN 'production' ELSE 'harness' END AS source_kind,
       epoch_us(max(time)) AS last_event_us,
       max(stream_seq) AS last_seq
FROM events
WHERE type <> 'report.published'
GROUP BY study
HAVING count(*) FILTER (WHERE run <> '_study') > 0
ORDER BY study;
