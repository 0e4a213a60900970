package harness

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

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
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(tool.Schema))
	if err != nil {
		return nil, fmt.Errorf("harness: schema of %s: %w", key, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	url := "mem:///" + key + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("harness: schema of %s: %w", key, err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("harness: schema of %s: %w", key, err)
	}
	schemaCache.Store(tool, s)
	return s, nil
}

var printer = message.NewPrinter(language.English)

// checkSchema validates raw arguments; it returns the violations (none = valid).
func checkSchema(s *jsonschema.Schema, raw []byte) []string {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return []string{"arguments are not valid JSON: " + err.Error()}
	}
	err = s.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []string{err.Error()}
	}
	// Distil: the leaf causes, each as "at <path>: <message>".
	var out []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			out = append(out, fmt.Sprintf("at /%s: %s", strings.Join(e.InstanceLocation, "/"), e.ErrorKind.LocalizedString(printer)))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return out
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
