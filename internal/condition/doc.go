// Package condition names what a harness run is switched to, as data: the independently
// switchable harness components (Components, recorded by their events.Component* names),
// their limits (Limits) and a named set of both (Condition).
//
// The named conditions are baseline (no component: native tool calling, every tool offered),
// harness (every component but Structured Planning) and harness_sp (all). Parse also accepts
// expressions such as "harness-retry" or "baseline+schema_gate+permission_gate", and New
// builds a condition with a study-chosen name from a list of component names.
//
// It is a leaf (package events and the standard library only), so that the study planner, the
// producer and the reports agree with the harness on conditions without linking the harness.
// What each component does when a run executes is package harness's.
package condition
