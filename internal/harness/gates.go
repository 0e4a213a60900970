package harness

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/dittolab/ditto/internal/taskfile"
	"github.com/dittolab/ditto/internal/tasks"
)

// schemaCache holds compiled tool schemas by tool, so that each is compiled once per process:
// tasks are immutable and the registry hands out the same *tasks.Task for a name, so there is
// one entry per registered tool (and a pointer key costs a lookup no allocation).
var schemaCache sync.Map // *tasks.Tool → *jsonschema.Schema

func toolSchema(task *tasks.Task, tool *tasks.Tool) (*jsonschema.Schema, error) {
	if s, ok := schemaCache.Load(tool); ok {
		return s.(*jsonschema.Schema), nil
	}
	key := task.Name + "/" + tool.Name
	s, err := taskfile.CompileSchema(key, tool.Schema)
	if err != nil {
		return nil, fmt.Errorf("harness: schema of %s: %w", key, err)
	}
	schemaCache.Store(tool, s)
	return s, nil
}

// canonicalArgs returns the canonical JSON of raw arguments, or, when they are not JSON, the
// raw text as a canonical JSON string so that the event still records what the model sent.
func canonicalArgs(raw string, canon func([]byte) ([]byte, error)) (json.RawMessage, bool) {
	if strings.TrimSpace(raw) == "" {
		raw = "{}"
	}
	if c, err := canon([]byte(raw)); err == nil {
		return c, true
	}
	s, _ := json.Marshal(raw) // a Go string always marshals
	c, err := canon(s)
	if err != nil { // invalid UTF-8 in the raw text: record a fixed marker
		c, _ = canon([]byte(`"<arguments not valid UTF-8>"`))
	}
	return c, false
}
