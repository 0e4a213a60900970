package taskfile

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Schema is the JSON Schema (draft 2020-12) of the task-file format, as published in the
// repository's docs/task.schema.json (a test keeps the two equal).
//
//go:embed task.schema.json
var Schema []byte

var compiled = sync.OnceValues(func() (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("mem:///task.schema.json", doc); err != nil {
		return nil, err
	}
	return c.Compile("mem:///task.schema.json")
})

var printer = message.NewPrinter(language.English)

// checkSchema validates the file's data against Schema, adding one problem per violation.
func checkSchema(doc any, ps *problems) {
	s, err := compiled()
	if err != nil {
		panic("taskfile: the embedded schema does not compile: " + err.Error()) // a build-time fact
	}
	err = s.Validate(doc)
	if err == nil {
		return
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		ps.add("", "%v", err)
		return
	}
	seen := map[string]bool{}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		path := pointerPath(e.InstanceLocation, doc)
		if o, ok := e.ErrorKind.(*kind.OneOf); ok {
			if msg := oneOfMessage(o, e, valueAt(doc, e.InstanceLocation)); msg != "" {
				add(ps, seen, path, msg)
				return
			}
		}
		if len(e.Causes) == 0 {
			add(ps, seen, path, leafMessage(e))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
}

func add(ps *problems, seen map[string]bool, path, msg string) {
	if key := path + "\x00" + msg; !seen[key] {
		seen[key] = true
		ps.add(path, "%s", msg)
	}
}

// oneOfMessage words a failed "exactly one of these members" choice, which the schema spells
// as a oneOf of required members; "" for any other oneOf.
func oneOfMessage(o *kind.OneOf, e *jsonschema.ValidationError, v any) string {
	if len(o.Subschemas) > 1 {
		// Several branches matched: name the members of the choice that are set.
		m, _ := v.(map[string]any)
		for _, set := range alternatives {
			var have []string
			for _, k := range set {
				if _, ok := m[k]; ok {
					have = append(have, k)
				}
			}
			if len(have) > 1 {
				return fmt.Sprintf("give exactly one of %s (%s are set)", strings.Join(set, ", "), strings.Join(have, " and "))
			}
		}
		return "give exactly one of the alternatives (more than one is set)"
	}
	var names []string
	for _, c := range e.Causes {
		r, ok := c.ErrorKind.(*kind.Required)
		if !ok {
			return ""
		}
		names = append(names, r.Missing...)
	}
	if len(names) == 0 {
		return ""
	}
	slices.Sort(names)
	return "needs exactly one of " + strings.Join(names, ", ")
}

// alternatives are the members of which the schema wants exactly one (its oneOf choices).
var alternatives = [][]string{{"server", "builtin", "fixtures"}, {"mcp", "http"}, {"command", "url"}, {"output", "error"}}

// valueAt returns the value at a JSON Pointer's elements in doc, or nil.
func valueAt(doc any, elems []string) any {
	cur := doc
	for _, e := range elems {
		switch v := cur.(type) {
		case map[string]any:
			cur = v[e]
		case []any:
			i, err := strconv.Atoi(e)
			if err != nil || i < 0 || i >= len(v) {
				return nil
			}
			cur = v[i]
		default:
			return nil
		}
	}
	return cur
}

func leafMessage(e *jsonschema.ValidationError) string {
	if a, ok := e.ErrorKind.(*kind.AdditionalProperties); ok {
		return fmt.Sprintf("unknown field(s) %s", strings.Join(quoteAll(a.Properties), ", "))
	}
	return e.ErrorKind.LocalizedString(printer)
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// CompileSchema compiles a JSON Schema (draft 2020-12 unless it says otherwise) given as JSON.
// name identifies it in errors. With Violations it is ditto's one way of checking JSON against a
// schema: the task-file checks and the harness's schema gate both call them.
func CompileSchema(name string, raw []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	url := "mem:///" + name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return c.Compile(url)
}

// Violations validates raw JSON against s and returns the violations, each as
// "at <JSON Pointer>: <message>" (the leaf causes); none means valid.
func Violations(s *jsonschema.Schema, raw []byte) []string {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return []string{"not valid JSON: " + err.Error()}
	}
	err = s.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []string{err.Error()}
	}
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
