// Package coding runs one coding-agent run: a model fixes a seeded defect of a shipped Go
// repository (package repos) in an ephemeral git worktree (package workspace), its patches are
// checked by real verification (package verify) and the diagnostics go back raw or distilled
// (package distill). It is the coding counterpart of package harness, and reports to the same
// Emitter with the same run events plus the coding ones (workspace.created and discarded,
// verification.ran, diagnostics.distilled, file.changed).
//
// A run, in order:
//
//  1. The worktree is created (workspace.created) and verified once before any patch (turn 0:
//     verification.ran, diagnostics.distilled); the model gets the task's instructions, how its
//     tools work, the instance's prompt and that verification's diagnostics.
//  2. Each model turn may call tools. Action space (component bash_only off): read, list,
//     search, edit (exact old → new replacement of one occurrence) and create; an edit of a
//     file not read before in the run is refused (tool.rejected, reason unread), and each edit
//     returns gofmt -l and go vet diagnostics. Component bash_only on: one bash tool, run in
//     the worktree under the workspace's isolation; commands naming paths outside it are
//     refused (reason permission), as are file-tool paths that leave it.
//  3. Test protection (component test_protection): a file-tool write to a test file
//     (*_test.go, testdata/) is refused (reason test-protected); a bash command that changes
//     one is detected by comparing the tree before and after it, and the change is reverted
//     (file.changed with protected and reverted). Without it, test files are writable — the
//     test-degradation trap a study can measure: such a run can pass its tests and still fail,
//     since success requires no test file changed.
//  4. A turn that changed a file is a patch turn: verification runs (go build, go vet, go test
//     [-race] ./...) and its diagnostics go back to the model as a user message, raw (the
//     commands' output as is) or distilled (component distilled_diagnostics: the tuples). The
//     run succeeds at the first verification whose tests pass with no test file changed.
//  5. Circuit breaker (component circuit_breaker): after Limits.MaxRepairTurns repair turns
//     (patch turns after the first) that still fail, or past Limits.TokenBudget tokens, the run
//     escalates. Without it only Limits.MaxSteps bounds the run.
//  6. Context management (condition.Context, package contextmgr): unmanaged by default. Under a
//     tier the conversation is a contextmgr.History whose preamble is the system prompt and the
//     task; before each model turn the Manager makes the request fit the budget (the messages,
//     the tools offered, an appended plan and the completion reserved): context.configured
//     first, then per turn context.elided (M1), a model.called of purpose summarize and its
//     context.summarized for each summarization (M3, a request to the run's own model with its
//     seed and sampling), and context.prepared with the request's size. T2 and T4 offer
//     recall_event (M2: context.recalled, the body as a new observation). A request that cannot
//     fit (T0 past the budget) records context.overflowed and ends the run with status
//     overflow. The endpoint's prompt-token counts calibrate the estimates (Manager.Observe).
//     Planning (component update_plan): the update_plan tool (plan.updated), the reminder
//     appended to the first request, then the current plan appended to each — never stored.
//  7. A turn without a tool call ends the run (failed unless the last verification
//     succeeded). The worktree is removed (workspace.discarded) before run.finished.
//
// The run's output is the canonical JSON {"patch": <git diff of the final tree>}, so that two
// runs agree exactly when they leave the same change. Tool results are JSON messages as in
// package harness: {"ok":true,"output":…} or {"ok":false,"error":<kind>,"detail":…}.
package coding
