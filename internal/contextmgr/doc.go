// Package contextmgr manages what an agent's model sees of its own history: the context-window
// budget, the three context-management mechanisms, the tiers built from them, and planning.
//
// A History is the conversation of one run as entries (one llm.Message each) with their token
// counts: a preamble (system prompt and task) that is always sent verbatim, then the steps of
// the run. A step starts at an assistant or user message; the tool messages that answer an
// assistant message belong to its step, so a step is never split (an endpoint refuses a tool
// message whose call it has not seen). The last Config.Recent steps are the recent window, sent
// verbatim; the steps between the preamble and the recent window are the middle region, the
// only place the mechanisms act.
//
// The mechanisms:
//
//   - M1 elision: in the middle region, a bulky observation (a tool message, or a user message
//     the harness wrote such as a verification, of at least Config.Bulky tokens) is replaced by
//     a short stub naming its id, its source and its size, and so are the bulky arguments of
//     the model's tool calls (a JSON stub naming ArgumentID, the tool and the size).
//   - M2 recall: elided bodies and arguments are kept in a Store; the stub says so, and the
//     recall_event(id) tool (RecallTool) gives one back as a new observation, which counts
//     against the budget like any other.
//   - M3 summarization: the oldest middle steps are folded into a running summary, written by a
//     separate model call (a Summarizer), placed after the preamble. A summary is folded into
//     the next one, never stacked.
//
// The tiers are presets of them: T0 none, T1 = M1, T2 = M1+M2, T3 = M3, T4 = M1+M2+M3 staged
// (keep the preamble and the recent window verbatim; above the soft threshold Config.Soft elide
// bulky middle observations, storing originals; above the hard threshold Config.Hard also
// summarize the oldest middle steps). T1, T2 and T3 act on their one mechanism above Soft.
//
// The budget. Manager.Prepare returns the messages of the next request and what it did. The
// request is the history plus Fixed tokens the caller adds (tool definitions, an appended plan,
// the completion it reserves) and must not exceed Config.Budget. Under T0 a history over the
// budget fails with *OverflowError (Reason ReasonUnmanaged). The managed tiers first do what
// their thresholds say; when the request would still not fit they go further, in this order,
// until it does: act on every middle step (anything a stub makes smaller elided, or every middle
// step summarized), shrinking the recent window one step at a time down to the last step; drop
// the oldest steps whole, then the summary, while even the last step cut to its markers would
// not fit beside them; cut the last step's observations, largest first. Only when the preamble,
// the fixed tokens and the last step cut as far as it can be alone exceed the budget does a
// managed tier overflow (Reason ReasonPreamble) — a request over the budget is never returned.
//
// Tokens are counted by a Counter; BPE counts with OpenAI's cl100k_base vocabulary, compiled
// into the binary (github.com/tiktoken-go/tokenizer: pure Go, works offline, no download at
// first use), plus the chat framing of each message. Manager.Observe corrects later estimates
// by the ratio of the endpoint's reported prompt tokens to the estimate of the same request, so
// a model whose tokenizer differs is still held to its real window.
//
// Planning (Plan, UpdatePlanTool, Reminder) is independent of the tiers: the model keeps a plan
// with the update_plan tool, is reminded to make one on its first turn, and the current plan is
// appended to each request's input without being stored in the history.
//
// Everything here is deterministic: no clock, no randomness, no map-order dependence; the same
// history and configuration give the same request and the same actions.
package contextmgr
