// Package taskfile is the task-file format: an agent task written as data (YAML or JSON) that
// ditto's harness can run without any Go code of the task's own.
//
// A task file declares the instructions the model is given; the tools (name, description, a JSON
// Schema of the arguments, the permission scope and resources a call touches, whether the tool is
// idempotent, and where it is served: an MCP server, an HTTP endpoint, a table of fixtures in the
// file, or a tool built into ditto); the procedure as a state graph (states, the tool each state
// requires, allowed transitions, branches chosen by CEL expressions over the tool's output); the
// checks of each state's output and of the final output (JSON Schema plus CEL rules); and the
// instances the task runs on, with the ideal output where it is known. The format is published as
// a JSON Schema (Schema, the file docs/task.schema.json of the repository).
//
// Parse reads a file, checks it against the schema and then for consistency (unknown or
// unreachable states, a state that cannot reach the end, tools used by no state or by two, branch
// expressions that do not compile, fixtures that do not fit their tool's schema, ...) and
// returns every problem at once, each with its path in the file ("states[2].next[0]") and, for a
// YAML or JSON file, its line and column (*Error of *Problem). Compile turns a parsed file into
// the programs that evaluate its rules, routes and checks (package cel-go).
//
// The package links neither the harness nor any tool transport: the producer validates task
// files with it, and the worker binds the declared tools to their servers elsewhere.
package taskfile
