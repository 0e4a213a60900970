package taskfile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// pos is a place in the file's text.
type pos struct{ line, col int }

// positions maps a value's path ("states[2].next[0]") to where it starts in the text.
type positions map[string]pos

// of returns the position of path, or of its nearest ancestor that has one.
func (ps positions) of(path string) (int, int) {
	for p := path; ; {
		if at, ok := ps[p]; ok {
			return at.line, at.col
		}
		if p == "" {
			return 0, 0
		}
		p = parentPath(p)
	}
}

// parentPath drops the last element of a path: "a.b[2]" → "a.b", "a.b" → "a", "a" → "".
func parentPath(p string) string {
	if strings.HasSuffix(p, "]") {
		if i := strings.LastIndexByte(p, '['); i >= 0 {
			return p[:i]
		}
	}
	if i := strings.LastIndexByte(p, '.'); i >= 0 {
		return p[:i]
	}
	return ""
}

// childPath appends a member name to a path, quoting names that are not plain identifiers.
func childPath(parent, key string) string {
	name := key
	if !plainKey(key) {
		name = strconv.Quote(key)
	}
	if parent == "" {
		return name
	}
	return parent + "." + name
}

func indexPath(parent string, i int) string { return fmt.Sprintf("%s[%d]", parent, i) }

func plainKey(k string) bool {
	if k == "" {
		return false
	}
	for _, c := range k {
		if !(c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// pointerPath turns the elements of a JSON Pointer (as the schema validator reports them) into
// a path: ["states", "2", "next"] → "states[2].next". An element is an index when its parent is
// an array in doc.
func pointerPath(elems []string, doc any) string {
	p := ""
	cur := doc
	for _, e := range elems {
		switch v := cur.(type) {
		case []any:
			i, err := strconv.Atoi(e)
			if err == nil && i >= 0 && i < len(v) {
				p = indexPath(p, i)
				cur = v[i]
				continue
			}
			p = childPath(p, e)
			cur = nil
		case map[string]any:
			p = childPath(p, e)
			cur = v[e]
		default:
			p = childPath(p, e)
			cur = nil
		}
	}
	return p
}

// decodeText reads YAML (of which JSON is a subset) into plain JSON values (map[string]any,
// []any, string, bool, nil, and json.Number for numbers, so that every number keeps its
// literal) and records where each value starts.
func decodeText(data []byte) (any, positions, error) {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		return nil, nil, fmt.Errorf("not YAML or JSON: %v", err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, nil, fmt.Errorf("more than one YAML document (line %d)", extra.Line)
	}
	ps := positions{}
	v, err := nodeValue(&root, "", ps, 0)
	if err != nil {
		return nil, nil, err
	}
	return v, ps, nil
}

// maxDepth bounds nesting (and alias expansion) of a task file.
const maxDepth = 64

func nodeValue(n *yaml.Node, path string, ps positions, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("line %d: nested more than %d levels", n.Line, maxDepth)
	}
	if n.Kind != yaml.DocumentNode {
		if _, seen := ps[path]; !seen {
			ps[path] = pos{n.Line, n.Column}
		}
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, fmt.Errorf("the file is empty")
		}
		return nodeValue(n.Content[0], path, ps, depth)
	case yaml.AliasNode:
		return nodeValue(n.Alias, path, ps, depth+1)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.ShortTag() == "!!merge" {
				return nil, fmt.Errorf("line %d: YAML merge keys are not supported", k.Line)
			}
			if k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("line %d: a key must be a string", k.Line)
			}
			if _, dup := m[k.Value]; dup {
				return nil, fmt.Errorf("line %d: key %q appears twice", k.Line, k.Value)
			}
			cp := childPath(path, k.Value)
			if _, seen := ps[cp]; !seen {
				ps[cp] = pos{k.Line, k.Column} // a member is where its key is
			}
			val, err := nodeValue(v, cp, ps, depth+1)
			if err != nil {
				return nil, err
			}
			m[k.Value] = val
		}
		return m, nil
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for i, c := range n.Content {
			val, err := nodeValue(c, indexPath(path, i), ps, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, val)
		}
		return out, nil
	case yaml.ScalarNode:
		return scalarValue(n)
	}
	return nil, fmt.Errorf("line %d: unsupported YAML node", n.Line)
}

func scalarValue(n *yaml.Node) (any, error) {
	switch n.ShortTag() {
	case "!!null":
		return nil, nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return nil, fmt.Errorf("line %d: %v", n.Line, err)
		}
		return b, nil
	case "!!int":
		var i int64
		if err := n.Decode(&i); err != nil {
			return nil, fmt.Errorf("line %d: %v", n.Line, err)
		}
		return json.Number(strconv.FormatInt(i, 10)), nil
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil {
			return nil, fmt.Errorf("line %d: %v", n.Line, err)
		}
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, fmt.Errorf("line %d: %s is not a JSON number", n.Line, n.Value)
		}
		if isJSONNumber(n.Value) {
			return json.Number(n.Value), nil // keep the literal: digits beyond float64 stay
		}
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
	case "!!str":
		return n.Value, nil
	}
	return nil, fmt.Errorf("line %d: unsupported YAML tag %s", n.Line, n.Tag)
}

func isJSONNumber(s string) bool {
	var n json.Number
	return json.Unmarshal([]byte(s), &n) == nil
}
