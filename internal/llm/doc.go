// Package llm is the model client the harness consumes: a small provider-neutral Model interface
// (one chat completion per call, with tools, tool_choice, a JSON-schema response format, seed and
// pinned sampling parameters) and an implementation for any OpenAI-compatible endpoint built on
// github.com/sashabaranov/go-openai (OpenAI, OpenRouter, vLLM, Ollama, ditto's simulated models).
//
// Transient failures (timeouts, HTTP 408/409/429 and 5xx, refused or reset connections) are
// retried with a bounded exponential backoff; every retry is returned to the caller
// (Response.Retries, or CallError.Retries when the call finally fails) so the harness can
// record it. Permanent failures (401/403: the key; 404 or model_not_found: the model; an
// exhausted quota; a context window exceeded; other 4xx) fail at the first attempt. A
// CallError says which (Kind, an events.Cause* kind; Permanent; Detail), so that the harness
// records a run the endpoint never answered as errored with its cause, and a missing key
// variable is ErrMissingKey when the client is built.
//
// Secrets: the API key is read from the environment variable named by Config.APIKeyEnv when the
// client is built. It is held only inside the go-openai client, never formatted into an error,
// a log line or an event, and Config carries the variable's name, never its value.
package llm
