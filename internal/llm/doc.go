// Package llm is the model client the harness consumes: a small provider-neutral Model interface
// (one chat completion per call, with tools, tool_choice, a JSON-schema response format, seed and
// pinned sampling parameters) and an implementation for any OpenAI-compatible endpoint built on
// github.com/sashabaranov/go-openai (OpenAI, OpenRouter, vLLM, Ollama, ditto's simulated models).
//
// Transport failures (timeouts, HTTP 408/409/429 and 5xx, connection errors) are retried with a
// bounded exponential backoff; every retry is returned to the caller (Response.Retries, or
// CallError.Retries when the call finally fails) so the harness can record it. Client errors
// (4xx other than those above) are not retried.
//
// Secrets: the API key is read from the environment variable named by Config.APIKeyEnv when the
// client is built. It is held only inside the go-openai client, never formatted into an error,
// a log line or an event, and Config carries the variable's name, never its value.
package llm
