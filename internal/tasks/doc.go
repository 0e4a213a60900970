// Package tasks holds ditto's agent tasks at run time: a state graph with one authorized tool
// per state, a JSON Schema for each tool's arguments, the tools themselves, an output validator
// per state and a ground-truth check of the final output.
//
// Tasks are data. A task file (package taskfile; FromFile) declares all of it, its tools served
// by an MCP server or HTTP endpoints (bound by a Binder the worker gives), by fixture tables in
// the file, or by tools built into ditto. The registered tasks are the built-in ones, each an
// embedded task file (builtin/<task>.yaml): credit_ecl (IFRS 9 expected credit loss),
// renal_dosing (Cockcroft–Gault creatinine clearance and dose adjustment) and aml_screening
// (sanctions screening whose path branches on the screening result). Get and Names look them
// up; Register adds others built in Go (a test task) after Task.Validate.
//
// Built-in tools. The built-in tasks' tools are written in Go here (their files name them as
// builtin: <task>.<tool>) over fixtures in fixtures/<task>/<instance>.json (embedded). Every
// tool takes a "path" argument naming a dataset in a virtual, read-only fixture store that holds
// every instance of the task. Tools resolve the path in that store, whatever the run's instance
// is, so a call outside the instance's Scope really reads another customer's data unless the
// harness's permission gate stops it first. InScope is the one definition of "inside the scope"
// shared by the tools' Resources and the harness. The built-in tasks also carry Ideal, the
// perfect agent the simulated models start from; a task file of anyone else has none.
//
// Determinism. Built-in and fixture tools are pure functions of (fixture store, arguments): no
// clock, no randomness, no map-order dependence in their output. They never panic on malformed
// arguments; they return an error the harness can relay to the model. A tool whose server is
// down returns ErrToolUnavailable, which ends the run as errored rather than failed.
package tasks
