// Package otlpmap turns OpenTelemetry trace spans into ditto events.
//
// It reads OTLP/HTTP export requests (protobuf or JSON), converts their spans into a small,
// plain Span model, buffers the spans of each trace until the trace is complete (Assembler),
// and maps one complete trace to one ditto run (MapTrace): run.started, plan.proposed,
// state.entered/exited, model.called, tool.called/returned and run.finished, with gapless
// sequence numbers and event ids derived from the trace and span ids, so that exporting the
// same trace twice yields the same events (and JetStream's duplicate window, or the analyzer's
// idempotent insert, stores them once).
//
// Three span vocabularies are understood: the OpenTelemetry GenAI semantic conventions
// (gen_ai.*), OpenInference (openinference.span.kind, llm.*, tool.*, input.value/output.value)
// and OpenLLMetry (traceloop.span.kind, traceloop.entity.*, gen_ai.usage.prompt_tokens). Spans
// of any other kind are walked through (their children still count) but produce no event; every
// such decision is recorded in the Result's Notes, never silently.
//
// The package does no I/O and reads no clock: the Assembler is told the time. MapTrace is a
// pure function of its input, and its output always folds cleanly with events.Fold.
package otlpmap
