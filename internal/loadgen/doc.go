// Package loadgen is ditto's sustained-load generator: it publishes realistic run event streams
// (run.started, a plan, per step a model call, a tool call and its result, run.finished — the
// shape of the bundled production sample and of harness runs) at a set rate for a set time,
// and measures what the analyzer makes of them: the rate held end to end (published → committed
// in DuckDB, read from the analyzer's durable consumer, which acknowledges only after commit),
// the consumer lag over time, and the peak memory of the processes it is told to watch.
//
// Load is bounded in every direction: at most Config.MaxInFlight publishes await an
// acknowledgement, the run ends after Config.Duration, and the wait for the analyzer to catch
// up ends after Config.DrainTimeout. It talks to whatever server the bus is connected to
// (loopback in `make load`).
package loadgen
