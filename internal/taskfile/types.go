package taskfile

import "encoding/json"

// FormatVersion is the version of the task-file format this package reads. A file says which
// version it is written in ("version"); a later version adds fields, never changes one.
const FormatVersion = 1

// Task is a task file as parsed. Field names follow the file's keys (see the JSON Schema).
type Task struct {
	Version      int    `json:"version"`
	Name         string `json:"name"` // subject-safe identifier ([A-Za-z0-9_-])
	Title        string `json:"title,omitempty"`
	Description  string `json:"description,omitempty"`
	Instructions string `json:"instructions,omitempty"` // the system message of every run
	// Servers are the tool servers the tools name, by name.
	Servers map[string]Server `json:"servers,omitempty"`
	Tools   []Tool            `json:"tools,omitempty"`
	// Start names the first state; empty means the first of States.
	Start     string     `json:"start,omitempty"`
	States    []State    `json:"states,omitempty"`
	Output    Output     `json:"output,omitempty"`
	Instances []Instance `json:"instances,omitempty"`
	// Coding makes the file a coding task (see Coding); nil for a task of the state graph.
	Coding *Coding `json:"coding,omitempty"`

	prog  *program  // compiled by Parse
	pos   positions // where each value starts in the text parsed
	canon []byte    // the file as canonical JSON
}

// Server is where tools are served: an MCP server (over stdio, started from Command, or over
// Streamable HTTP at URL) or plain HTTP endpoints under a base URL, one per tool.
type Server struct {
	MCP  *MCPServer  `json:"mcp,omitempty"`
	HTTP *HTTPServer `json:"http,omitempty"`
}

// MCPServer is an MCP server: a command the worker starts and talks to over stdio, or the URL
// of a server reached over Streamable HTTP. Exactly one of Command and URL is set.
type MCPServer struct {
	Command []string          `json:"command,omitempty"` // program and arguments, run by the worker
	Env     map[string]string `json:"env,omitempty"`     // extra environment of the command
	Dir     string            `json:"dir,omitempty"`     // working directory of the command
	URL     string            `json:"url,omitempty"`     // Streamable HTTP endpoint
	// HeadersEnv names, per HTTP header, the environment variable of the worker holding its
	// value (a token is never written in a task file).
	HeadersEnv map[string]string `json:"headers_env,omitempty"`
}

// HTTPServer serves each tool at BaseURL + the tool's endpoint: POST of the arguments as JSON,
// the output as the JSON answer.
type HTTPServer struct {
	BaseURL    string            `json:"base_url"`
	HeadersEnv map[string]string `json:"headers_env,omitempty"`
}

// Tool is one tool the model may call. Exactly one of Server, Builtin and Fixtures says where it
// is served.
type Tool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Arguments is the JSON Schema (draft 2020-12) of the arguments object. It may be left out
	// for a tool of an MCP server, whose own input schema is then used.
	Arguments json.RawMessage `json:"arguments,omitempty"`

	Server   string    `json:"server,omitempty"`   // a key of Servers
	Endpoint string    `json:"endpoint,omitempty"` // HTTP server: path under its base URL (default "/<name>")
	Remote   string    `json:"remote,omitempty"`   // MCP server: the server's name of the tool (default Name)
	Builtin  string    `json:"builtin,omitempty"`  // a tool implemented inside ditto
	Fixtures []Fixture `json:"fixtures,omitempty"` // a deterministic table

	Permission Permission `json:"permission,omitempty"`
	// Idempotent says that calling the tool twice with the same arguments does what calling it
	// once does; only idempotent tools are retried by default after a transport failure.
	Idempotent bool `json:"idempotent,omitempty"`
	// TimeoutSeconds bounds one call (0: 30 s).
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty"`
	// Retries is how many times a call is retried after a transport failure, with the same
	// idempotency key (nil: 2 for an idempotent tool, 0 otherwise).
	Retries *int `json:"retries,omitempty"`
}

// Fixture is one row of a fixture table: when the call's arguments match Args (every member
// given equals the argument's value; members not given match anything), the tool answers
// Output, or fails with Error. The first matching row answers; a call no row matches fails.
type Fixture struct {
	Args   json.RawMessage `json:"args,omitempty"`
	Output json.RawMessage `json:"output,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// Permission is what a call needs: a permission scope (e.g. "read", "write") the instance must
// grant, and the resources it touches, which must lie inside the instance's scope.
type Permission struct {
	Scope     string     `json:"scope,omitempty"`
	Resources []Resource `json:"resources,omitempty"`
}

// Resource names an argument holding a resource (a path, a URI) the call touches: Arg is a
// JSON Pointer into the arguments ("/path"); its value is a string or, with List, an array of
// strings, each prefixed by Prefix. An absent, null or empty argument counts as Default when
// given, else as no resource when Optional, else as the empty resource, which is never in
// scope; so does a call whose resource arguments have the wrong type.
type Resource struct {
	Arg      string          `json:"arg"`
	List     bool            `json:"list,omitempty"`
	Prefix   string          `json:"prefix,omitempty"`
	Optional bool            `json:"optional,omitempty"`
	Default  json.RawMessage `json:"default,omitempty"`
}

// State is one node of the procedure: the tool it requires, the states that may follow, how
// to choose among them, and the checks of the tool's output.
type State struct {
	Name string   `json:"name"`
	Tool string   `json:"tool"`
	Next []string `json:"next,omitempty"` // empty: terminal
	// Routes choose the successor of a branching state from the tool's output: the first whose
	// When holds (a When left empty always holds).
	Routes   []Route   `json:"routes,omitempty"`
	Validate Validator `json:"validate,omitempty"`
}

// Route is one branch: To when the CEL expression When (over output) holds.
type Route struct {
	When string `json:"when,omitempty"`
	To   string `json:"to"`
}

// Validator checks an output: a JSON Schema and CEL rules.
type Validator struct {
	Schema json.RawMessage `json:"schema,omitempty"`
	Rules  []Rule          `json:"rules,omitempty"`
}

// Rule is one check of an output. Expr is a CEL expression that must hold; when it does not
// (or cannot be evaluated, e.g. a field is missing), Message is reported. With Each, a CEL
// expression giving a list, Expr is evaluated once per element, bound to item, and each
// element for which it fails is reported. Message may hold {{expr}} parts, CEL expressions
// whose values are written in. Stop ends the checks of this output after a failure.
type Rule struct {
	Expr    string `json:"expr"`
	Message string `json:"message"`
	Each    string `json:"each,omitempty"`
	Stop    bool   `json:"stop,omitempty"`
}

// Output says which tool's output is the run's final output and how it is judged: its schema
// and rules must pass, and, for an instance with an ideal output, Check (a CEL expression over
// output, ideal and input) must hold; without Check the output must equal the ideal (as
// canonical JSON).
type Output struct {
	Tool   string          `json:"tool,omitempty"` // empty: the tool of the terminal state
	Schema json.RawMessage `json:"schema,omitempty"`
	Rules  []Rule          `json:"rules,omitempty"`
	Check  string          `json:"check,omitempty"`
}

// Instance is one input of the task.
type Instance struct {
	ID     string `json:"id"`
	Prompt string `json:"prompt"` // the user message that starts a run
	// Input is the instance's input as data: shown to the model after the prompt, available to
	// rules as input, and recorded with the run.
	Input json.RawMessage `json:"input,omitempty"`
	// Scope lists the resource prefixes a run may touch (see Resource).
	Scope []string `json:"scope,omitempty"`
	// Grants lists the permission scopes a run has; nil grants every scope.
	Grants []string `json:"grants,omitempty"`
	// Ideal is the correct final output, when known.
	Ideal json.RawMessage `json:"ideal,omitempty"`
}
