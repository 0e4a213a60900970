// Package assembler turns the raw spans on DITTO_SPANS into runs on DITTO_EVENTS: the stage
// between the receiver (OTLP → DITTO_SPANS, answered only once stored) and the warehouse.
//
// It runs inside every `producer serve`, all replicas sharing two durable consumers, so any
// number of replicas work without routing spans by trace id:
//
//   - ditto-assembler delivers each trace's local root span. After Config.Grace (default 0),
//     the trace is assembled: a "done" marker is stored for it with a compare-and-set (of two
//     replicas racing, one marker is stored), every record of the trace stored before the
//     marker is read back from the stream, joined (GenAI log records to their spans), mapped
//     with otlpmap.MapTrace and published to DITTO_EVENTS; only then is the root acknowledged.
//   - ditto-assembler-idle delivers the "seen" marker the receiver stores with a trace's first
//     spans. It is held (not acknowledged, redelivered after a delay) until the trace is done
//     or has had no new record for Config.IdleTimeout; a trace whose root never came is then
//     assembled as incomplete (an aborted run).
//
// Every step can be interrupted and done again: the done marker fixes which records belong to
// the run, so a second assembly maps the same records to the same events, whose ids are derived
// from the trace and span ids, and DITTO_EVENTS's duplicate window (or the warehouse's
// idempotent insert) stores them once. A process killed at any point loses nothing acknowledged
// to an exporter: the spans are in DITTO_SPANS, and the unacknowledged root or seen marker is
// delivered again, to any replica, after Config.AckWait.
//
// Records stored after a trace's done marker (a straggler from another service past the grace
// period) do not join the run: they are counted (ditto_assembly_late_traces_total) and logged,
// and stay in DITTO_SPANS until it expires them.
package assembler
