package simllm

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schemaNode is a decoded JSON Schema object, read leniently: a persona only needs the
// keywords that say which values are valid-but-different and which are invalid.
type schemaNode map[string]any

func asNode(v any) schemaNode {
	if m, ok := v.(map[string]any); ok {
		return schemaNode(m)
	}
	return nil
}

// parsedSchemas memoises parseSchema (bounded like canonicalCache). Callers never modify a
// schemaNode, so sharing them is safe.
var (
	parsedSchemas      sync.Map // string(raw) → schemaNode
	parsedSchemasCount atomic.Int64
)

// parseSchema decodes a raw schema; nil for anything that is not an object.
func parseSchema(raw json.RawMessage) schemaNode {
	if n, ok := parsedSchemas.Load(string(raw)); ok {
		return n.(schemaNode)
	}
	n := asNode(canonicalAny(raw))
	if parsedSchemasCount.Load() < canonicalCacheMax {
		if _, loaded := parsedSchemas.LoadOrStore(string(raw), n); !loaded {
			parsedSchemasCount.Add(1)
		}
	}
	return n
}

func (s schemaNode) props() map[string]schemaNode {
	out := map[string]schemaNode{}
	if m, ok := s["properties"].(map[string]any); ok {
		for k, v := range m {
			if n := asNode(v); n != nil {
				out[k] = n
			}
		}
	}
	return out
}

func (s schemaNode) required() map[string]bool {
	out := map[string]bool{}
	if arr, ok := s["required"].([]any); ok {
		for _, v := range arr {
			if k, ok := v.(string); ok {
				out[k] = true
			}
		}
	}
	return out
}

func (s schemaNode) items() schemaNode { return asNode(s["items"]) }

func (s schemaNode) enum() []any {
	arr, _ := s["enum"].([]any)
	return arr
}

// typ is the schema's single type, inferred from enum or const when "type" is absent; "" when
// unknown or a union.
func (s schemaNode) typ() string {
	switch t := s["type"].(type) {
	case string:
		return t
	case []any:
		for _, x := range t {
			if x != "null" {
				if str, ok := x.(string); ok {
					return str
				}
			}
		}
	}
	if e := s.enum(); len(e) > 0 {
		return jsonType(e[0])
	}
	if s["properties"] != nil {
		return "object"
	}
	if s["items"] != nil {
		return "array"
	}
	return ""
}

func (s schemaNode) num(key string) (float64, bool) {
	if n, ok := s[key].(json.Number); ok {
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

func (s schemaNode) closed() bool {
	b, ok := s["additionalProperties"].(bool)
	return ok && !b
}

func (s schemaNode) description() string {
	d, _ := s["description"].(string)
	return d
}

// defaultRE finds a default stated in prose: "(default 2)", "(default: all)", "default false".
var defaultRE = regexp.MustCompile(`\(default:?\s+([^)]+)\)`)

// defaultValue is the schema's default: the "default" keyword, or one stated in the
// description in a form that fits the schema's type.
func (s schemaNode) defaultValue() (any, bool) {
	if v, ok := s["default"]; ok {
		return v, true
	}
	m := defaultRE.FindStringSubmatch(s.description())
	if m == nil {
		return nil, false
	}
	word := strings.TrimSpace(m[1])
	if e := s.enum(); len(e) > 0 {
		for _, v := range e {
			if str, ok := v.(string); ok && str == word {
				return str, true
			}
		}
		return nil, false
	}
	switch s.typ() {
	case "boolean":
		if b, err := strconv.ParseBool(word); err == nil {
			return b, true
		}
	case "integer":
		if _, err := strconv.Atoi(word); err == nil {
			return json.Number(word), true
		}
	case "number":
		if _, err := strconv.ParseFloat(word, 64); err == nil {
			return json.Number(word), true
		}
	case "string":
		return word, true
	}
	return nil, false
}

// jsonType names the JSON type of a decoded value.
func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		if _, err := x.Int64(); err == nil && !strings.ContainsAny(string(x), ".eE") {
			return "integer"
		}
		return "number"
	case float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return ""
}

// validators caches compiled schemas by the SHA-256 of their canonical JSON.
var validators sync.Map // [32]byte → *compiled

type compiled struct {
	sch *jsonschema.Schema // nil when the schema does not compile
}

// validatorFor compiles raw (draft 2020-12 unless it says otherwise); nil when it cannot be
// compiled, in which case callers skip validation-driven choices.
func validatorFor(raw json.RawMessage) *jsonschema.Schema {
	if len(raw) == 0 {
		return nil
	}
	canon := canonicalJSON(raw)
	key := sha256.Sum256(canon)
	if c, ok := validators.Load(key); ok {
		return c.(*compiled).sch
	}
	c := &compiled{}
	if doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(canon)); err == nil {
		comp := jsonschema.NewCompiler()
		if comp.AddResource("mem:///schema.json", doc) == nil {
			if sch, err := comp.Compile("mem:///schema.json"); err == nil {
				c.sch = sch
			}
		}
	}
	validators.Store(key, c)
	return c.sch
}

// valid reports whether the decoded value v satisfies sch (true when sch is nil: unknown).
func valid(sch *jsonschema.Schema, v any) bool {
	if sch == nil {
		return true
	}
	b, err := json.Marshal(v)
	if err != nil {
		return false
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return false
	}
	return sch.Validate(doc) == nil
}
