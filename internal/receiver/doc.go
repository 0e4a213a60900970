// Package receiver is ditto's HTTP ingestion server for production agents (`producer serve`):
//
//   - POST /v1/events takes ditto events (a JSON array, or NDJSON: one event per line),
//     validates each with events.Decode, publishes the valid ones to JetStream and answers only
//     after JetStream acknowledged them, listing every rejected event with its index and reason.
//   - POST /v1/traces takes OTLP/HTTP trace exports (protobuf or JSON), buffers each trace's
//     spans until its root span arrives (otlpmap.Assembler), maps the trace to one ditto run
//     (otlpmap.MapTrace) and publishes its events; rejected spans are reported in the OTLP
//     partial_success.
//   - GET /metrics (Prometheus), GET /healthz, GET /readyz.
//
// Every write needs a bearer token bound to the studies it may write (see Config and
// docs/http-api.md). Admission is bounded: at most Config.MaxPending events are published and
// not yet acknowledged across the server; a request that finds no room within AdmitWait is
// answered 429 with Retry-After and nothing of it is published, and a JetStream that does not
// acknowledge yields 503 with Retry-After. Memory is bounded by MaxPending, MaxBodyBytes times
// the number of concurrent requests (MaxConcurrent) and the assembler's span bounds.
package receiver
