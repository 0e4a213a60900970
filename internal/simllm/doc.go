// Package simllm is ditto's simulated models: an OpenAI-compatible HTTP server
// (POST /v1/chat/completions, GET /v1/models) hosting seeded stochastic "personas" that know how
// to do each task of package tasks and deviate from the ideal agent in the ways real models do:
// arguments formatted differently (optional fields added or dropped, numbers rounded where the
// schema allows), plans worded differently, tools skipped or reordered when the model is free to
// choose, malformed JSON plans, schema-violating arguments, resource paths outside the task's
// scope, a latency model that really waits, and token counts.
//
// # What a persona sees
//
// A persona reacts only to the decoded request body: the model name, the messages (including the
// assistant tool calls and tool results already in the conversation), the offered tools,
// tool_choice, response_format, seed, temperature, top_p and the token limits. Headers, the URL
// query and unknown body fields are never read, so the simulated model cannot learn the harness
// condition, the study or the run: any difference between conditions comes from what the harness
// puts in the request, exactly as with a real model. The code keeps that property structural:
// the HTTP handler decodes the body into chatRequest (whose fields are all standard OpenAI
// fields, checked by a test) and hands only that value to the persona.
//
// # Randomness
//
// Every random choice is a pure function of the request: a SHA-256 key is derived from the seed
// and the canonical JSON of model, messages, tools, tool_choice and response_format, and each
// decision draws from its own labelled sub-stream of that key. Identical requests with identical
// seeds therefore give byte-identical responses (the response id, tool call ids and created
// timestamp are derived too). Sampling parameters are not part of the key, so for one request
// the deviations made at a lower temperature are a subset of those made at a higher one. A
// request without a seed draws a fresh key from crypto/rand, as a real endpoint is
// nondeterministic without one.
//
// # Temperature and top_p
//
// Every deviation rate of a persona is given at temperature 1, top_p 1 and multiplied by
// g(temperature)·g(top_p), g(x) = floor + (1−floor)·x, where floor is the persona's
// temperature_floor (rates are capped at 1). Temperature 0 therefore reduces variance to
// floor × the nominal rates but does not remove it, as with hosted models whose greedy decoding
// is still not bit-reproducible; temperature 2 nearly doubles it. Absent parameters take the
// OpenAI defaults, 1. (go-openai omits a zero float32 from the JSON; a client that wants 0 sends
// the smallest positive float32, which is 0 here for all purposes.) The backfill choice and the
// latency jitter are not scaled.
//
// # Fidelity details
//
// Responses follow the OpenAI chat.completion shape: content null beside tool calls, one
// choice, usage with prompt/completion/total tokens (estimated from the canonical size of the
// request and of the answer at the persona's characters per token), system_fingerprint from the
// persona, finish_reason "tool_calls" for a call the model chose, "stop" for text and for a call
// forced by tool_choice (as OpenAI reports it), "length" when max_tokens or
// max_completion_tokens cut the answer. A json_object request gets an object ({"plan": [...]}
// for a plan); a json_schema request gets a value of the schema's shape (a bare array if the
// schema's root is one). Under strict json_schema a plan is always schema-valid JSON; it can
// still be a wrong path of the graph. Errors use the OpenAI error body with a "simllm:" message.
// Streaming and n > 1 are refused with 400.
//
// # Tasks
//
// The task is recognised from the request alone: the task's instructions or name in a system
// message, an instance prompt in a user message, and the overlap between the task's tool names
// and the tools offered, named in tool_choice or already called. The tool results are rebuilt
// from the assistant tool_calls and the tool messages answering them; a tool message whose
// content is not JSON, or is a JSON object with an "error" member, is a failed call.
//
// A task the personas were not taught (a task file of anyone's, absent from package tasks'
// registry) is done from the request alone (generic.go): the offered tools in the order
// offered, each argument taken from a value of the same name the persona has seen (the
// instance's input in the user message, earlier outputs) when it fits the argument's schema,
// else drawn from the schema (enum member, default, value in range); a tool whose required
// list would be empty is passed over, a refusal naming the state's tool ("authorizes only X")
// is followed, a failed call is made again. The persona's seeded deviations apply as for the
// tasks it knows.
package simllm
