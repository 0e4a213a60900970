// Package tasks defines ditto's agent tasks as data: a state graph with one authorized tool per
// state, a JSON Schema for each tool's arguments, deterministic tool implementations over fixture
// data embedded in the binary, an output validator per state and a ground-truth check of the
// final output, plus Ideal, the perfect agent the simulated models start from.
//
// Registered tasks: credit_ecl (IFRS 9 expected credit loss), renal_dosing (Cockcroft–Gault
// creatinine clearance and dose adjustment) and aml_screening (sanctions screening whose path
// branches on the screening result). Get and Names look them up; Register adds others (a
// study's own task, a test task) after Task.Validate.
//
// Fixtures live in fixtures/<task>/<instance>.json (embedded); instance i of a task is the i-th
// file in name order, its dataset path is data/<task>/<instance> and its scope is that path plus
// reports/<task>/<instance> (plus "watchlists" for aml_screening).
//
// Resources. Every tool takes a "path" argument naming a dataset in a virtual, read-only
// fixture store that holds every instance of the task. Tools resolve the path in that store,
// whatever the run's instance is, so a call outside the instance's Scope really reads another
// customer's data unless the harness's permission gate stops it first. InScope is the one
// definition of "inside the scope" shared by the tools' Resources and the harness.
//
// Determinism. Tools are pure functions of (fixture store, arguments): no clock, no randomness,
// no map-order dependence in their output. Tools never panic on malformed arguments; they
// return an error the harness can relay to the model.
package tasks
