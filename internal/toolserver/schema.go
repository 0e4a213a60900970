package toolserver

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Mismatch is one way a task file's argument schema contradicts a server's: Path is relative
// to the arguments schema (".properties.path.type", "" for the whole schema).
type Mismatch struct {
	Path string
	Msg  string
}

// Mismatches compares the argument schema a task file declares for a tool with the input
// schema its server publishes, and returns where they contradict each other: a property the
// server does not know (when it lists its properties), a type the server's does not admit
// (integer is a number), an argument the server requires that the file does not. Nested
// object properties are compared the same way. Constraints the file adds (an enum, a pattern,
// a minimum) narrow the server's schema and are not contradictions.
func Mismatches(declared, served []byte) []Mismatch {
	var d, s map[string]any
	if json.Unmarshal(declared, &d) != nil || json.Unmarshal(served, &s) != nil {
		return nil // the file's schema is checked by the file's checks; a server's without one is open
	}
	var out []Mismatch
	compareSchemas("", d, s, &out)
	return out
}

func compareSchemas(path string, d, s map[string]any, out *[]Mismatch) {
	dt, st := types(d["type"]), types(s["type"])
	if len(dt) > 0 && len(st) > 0 {
		for _, t := range dt {
			if !admits(st, t) {
				*out = append(*out, Mismatch{path + ".type", fmt.Sprintf("type %s, the server's is %s", t, strings.Join(st, " or "))})
				break
			}
		}
	}
	dp, _ := d["properties"].(map[string]any)
	sp, sHas := s["properties"].(map[string]any)
	for _, name := range sortedKeys(dp) {
		sub := path + ".properties." + name
		sv, ok := sp[name]
		if !ok {
			if sHas {
				*out = append(*out, Mismatch{sub, fmt.Sprintf("the server has no argument %q (its arguments: %s)", name, strings.Join(sortedKeys(sp), ", "))})
			}
			continue
		}
		dm, _ := dp[name].(map[string]any)
		sm, _ := sv.(map[string]any)
		if dm != nil && sm != nil {
			compareSchemas(sub, dm, sm, out)
		}
	}
	dreq := strs(d["required"])
	for _, r := range strs(s["required"]) {
		if !slices.Contains(dreq, r) {
			*out = append(*out, Mismatch{path + ".required", fmt.Sprintf("the server requires %q, which the file does not", r)})
		}
	}
}

// types is a schema's "type" as a list.
func types(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		return strs(x)
	}
	return nil
}

func admits(served []string, t string) bool {
	return slices.Contains(served, t) || t == "integer" && slices.Contains(served, "number")
}

func strs(v any) []string {
	l, _ := v.([]any)
	var out []string
	for _, e := range l {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
