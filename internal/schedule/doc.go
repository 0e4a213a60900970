// Package schedule makes ditto's scheduled variance reports. Building and rendering a report,
// and serving the reports directory (report.Handler), are package report's.
//
// A Scheduler runs on a cron schedule (github.com/go-co-op/gocron/v2; five fields, six with
// seconds, or descriptors such as "@hourly"). Each run regenerates, into the reports
// directory, the report of every study with events newer than its last report, and for every
// production study a drift report: its (task, model) cells over the last window against the
// window before (analysis.CompareWindows via report.BuildDrift). Each report is announced on
// NATS as a report.published event of its study (run events.StudyRun).
//
// # Alerts
//
// When a report of a drift or of a production study (consecutive releases) has comparisons
// that turned significant in the bad direction (RR, DI, TSS, AC or success down; tokens or
// latency up: report.IsBad), the webhook receives one POST for that report listing them
// (Alert). A finding alerts once when it turns bad; while it stays bad later runs do not
// repeat it, and once it clears it may alert again. Harness studies compare designs side by
// side, not a change over time, and do not alert.
//
// # Missed runs
//
// The time of the last run, each study's latest reported event and the findings alerted are
// kept in <reports>/schedule-state.json. On Start, if the schedule fired between the last run
// and now (the analyzer was down), one run is made at once.
package schedule
