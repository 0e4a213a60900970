// Package harness runs one agent run of a task under a harness condition against a model, and
// reports every step to an Emitter as typed events (package events), in order.
//
// The run's condition (package condition: which components are switched on, and their limits)
// is data the harness receives in RunSpec; the named conditions are baseline (none), harness
// (all but Structured Planning) and harness_sp (all).
//
// What each component does:
//
//   - fsm (finite-state execution): the harness holds the current state of the task graph and
//     moves only along its transitions, choosing branches with State.Route on the tool output.
//     A call to any tool but the current state's is rejected (unauthorized) and never runs. The
//     run ends when the terminal state's tool has succeeded; a turn without a tool call is a
//     failed turn and the model is told which tool the state needs.
//   - forced_tool: each request offers only the current state's tool and sets tool_choice to it;
//     a call to any other tool is rejected (unauthorized) and never runs. Alone (without fsm)
//     the harness still follows the graph to know which tool to name, but a turn without a tool
//     call ends the run, as in baseline.
//   - validation: each tool output is checked by its state's validator; an invalid output is
//     not accepted (no transition, not a final output) and the model gets the problems back.
//   - retry: a failed turn (rejected call, tool error, invalid output, no tool call under fsm)
//     schedules a retry of its state, re-entering it; after Limits.MaxRetries retries of one
//     state the run escalates.
//   - structured_planning: before any tool is offered the model must return a JSON array of
//     {"state", "intended_tool"} (response_format json_schema). A valid plan is a path of the
//     task graph from Start to a terminal state, each step naming its state's tool, no state
//     twice. For a branching task any such path is valid: the model cannot know the data before
//     the branching tool has run. A rejected plan is re-prompted with its errors at most
//     Limits.MaxPlanReprompts times, then the run escalates. Only the canonical [{state, tool}]
//     steps are recorded as the accepted plan. Without it, a free-text plan is requested (no
//     tools offered) and recorded as proposed.
//   - schema_gate: arguments are validated against the tool's JSON Schema (draft 2020-12, by
//     santhosh-tekuri/jsonschema) before anything runs; the model gets the errors back.
//   - permission_gate: every resource a call touches (Tool.Resources) must be inside
//     Instance.Scope (tasks.InScope), or the call is rejected before any side effect.
//   - circuit_breaker: at most Limits.MaxRepairTurns consecutive repair turns after a failure
//     (the next failed turn escalates), and at most Limits.TokenBudget tokens per run (calls of
//     the response that crosses it are rejected with reason budget, and the run escalates).
//
// Without fsm and forced_tool the run is free: every tool is offered with tool_choice auto, the
// model drives until it answers without a tool call or Limits.MaxSteps model turns have been
// used. States are then derived from the tools: each executed call is wrapped in state.entered
// and state.exited of the state that authorizes its tool.
//
// Tool messages. The model receives every tool result as JSON: {"ok":true,"output":<output>}
// on success, {"ok":false,"error":<kind>,"detail":<text>,...} otherwise, kind being one of
// unauthorized, schema, permission, budget, tool_error, output_invalid, route. A call whose
// arguments are not JSON is recorded with its raw text as a JSON string.
//
// Outcome. The final output is the canonical JSON of the last accepted output of
// Task.FinalTool (accepted: executed successfully and, with validation on, valid); none means
// the run has no output. Status: escalated when the harness escalated, aborted when ctx ended
// the run, otherwise succeeded when Task.Check passes on the output and failed when it does
// not or there is no output. Success is true exactly for succeeded.
//
// The harness never sleeps; it reads the clock only to measure latencies.
package harness
