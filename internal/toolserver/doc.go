// Package toolserver binds the tools of a task file to the servers that serve them: an MCP
// server (a command the worker starts and talks to over stdio, or a Streamable HTTP URL),
// through the official Go SDK (github.com/modelcontextprotocol/go-sdk), or a plain HTTP
// endpoint per tool. A Pool is a tasks.Binder: tasks.FromFile calls it for each tool of a
// server.
//
// Binding an MCP tool connects to its server (once per server and task file, shared by every
// run of the worker), reads the server's tool list and checks the task's declaration against
// it: a tool the server does not serve, or an argument schema that contradicts the server's
// (a property the server does not know, a different type, an argument the server requires and
// the file does not), is reported with its path in the file (*taskfile.Error). A tool whose file
// gives no argument schema takes the server's.
//
// Every call carries its idempotency key (tasks.IdempotencyKey): in the request's _meta as
// "dev.ditto/idempotency_key" for MCP, in the Idempotency-Key header for HTTP, so that a server
// recognises a retry. The harness applies the gates, the timeout, the retries and the circuit
// breaker; here a call either answers (an output, or the tool's own error, which the model is
// shown) or fails with an error wrapping tasks.ErrToolUnavailable: the server was not reached,
// died, or did not answer in time. A server that died stays down for the Pool's life: the runs
// that need it error (infrastructure) instead of failing.
//
// The package links the MCP SDK; the producer, which validates task files without reaching
// any server, does not link it.
package toolserver
