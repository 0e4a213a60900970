package taskfile

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
	"cel.dev/cel-go/ext"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The CEL environments. Every expression sees the output it judges as output, and a rule with
// each sees the element as item. The state rules and routes see nothing else; the final
// output's rules and check also see the instance's input and ideal output (null when the
// instance has none). Numbers read from JSON are doubles; the standard library is extended with
// cel-go's strings, math, lists, sets, bindings (cel.bind) and optional values
// (output.?field.orValue(default)). A member whose value is null is absent (see decode).
var (
	stateEnv  = sync.OnceValues(func() (*cel.Env, error) { return newEnv("output", "item") })
	outputEnv = sync.OnceValues(func() (*cel.Env, error) { return newEnv("output", "input", "ideal", "item") })
)

func newEnv(vars ...string) (*cel.Env, error) {
	opts := []cel.EnvOption{
		ext.Strings(), ext.Math(), ext.Lists(), ext.Sets(), ext.Bindings(), cel.OptionalTypes(),
		cel.CrossTypeNumericComparisons(true),
	}
	for _, v := range vars {
		opts = append(opts, cel.Variable(v, cel.DynType))
	}
	return cel.NewEnv(opts...)
}

// expr is a compiled CEL expression.
type expr struct {
	src string
	prg cel.Program
}

// compileExpr compiles src in env; want is the result type it must be able to have (nil: any).
func compileExpr(env *cel.Env, src string, want *cel.Type) (*expr, error) {
	ast, iss := env.Compile(src)
	if iss != nil && iss.Err() != nil {
		return nil, fmt.Errorf("does not compile: %s", oneLine(iss.Err().Error()))
	}
	if want != nil {
		out := ast.OutputType()
		if out.Kind() != want.Kind() && !out.IsExactType(cel.DynType) {
			return nil, fmt.Errorf("gives %s, want %s", out, want)
		}
	}
	prg, err := env.Program(ast, cel.EvalOptions(cel.OptOptimize), cel.CostLimit(1_000_000))
	if err != nil {
		return nil, fmt.Errorf("does not compile: %s", oneLine(err.Error()))
	}
	return &expr{src: src, prg: prg}, nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// eval evaluates e over vars.
func (e *expr) eval(vars map[string]any) (ref.Val, error) {
	v, _, err := e.prg.Eval(vars)
	return v, err
}

// holds reports whether e evaluates to true; an error (a missing field, a wrong type) is false.
func (e *expr) holds(vars map[string]any) bool {
	v, err := e.eval(vars)
	return err == nil && v == types.True
}

// template is a rule's message: literal text and {{expr}} parts written in.
type template struct {
	lits  []string // len(parts)+1
	parts []*expr
}

// compileMessage splits a message into text and {{expr}} parts and compiles the parts.
func compileMessage(env *cel.Env, src string) (*template, error) {
	m := &template{}
	rest := src
	for {
		i := strings.Index(rest, "{{")
		if i < 0 {
			m.lits = append(m.lits, rest)
			return m, nil
		}
		j := strings.Index(rest[i+2:], "}}")
		if j < 0 {
			return nil, fmt.Errorf("{{ at byte %d has no closing }}", len(src)-len(rest)+i)
		}
		e, err := compileExpr(env, strings.TrimSpace(rest[i+2:i+2+j]), nil)
		if err != nil {
			return nil, fmt.Errorf("{{%s}} %v", rest[i+2:i+2+j], err)
		}
		m.lits = append(m.lits, rest[:i])
		m.parts = append(m.parts, e)
		rest = rest[i+2+j+2:]
	}
}

func (m *template) render(vars map[string]any) string {
	if len(m.parts) == 0 {
		return m.lits[0]
	}
	var b strings.Builder
	for i, p := range m.parts {
		b.WriteString(m.lits[i])
		v, err := p.eval(vars)
		if err != nil {
			b.WriteString("<" + oneLine(err.Error()) + ">")
			continue
		}
		b.WriteString(formatValue(v))
	}
	b.WriteString(m.lits[len(m.lits)-1])
	return b.String()
}

// formatValue writes a CEL value as Go's %v would write the JSON value it stands for: strings
// bare, numbers shortest ("12", "0.95", "1e+21"), anything else as JSON.
func formatValue(v ref.Val) string {
	switch x := v.(type) {
	case types.String:
		return string(x)
	case types.Int:
		return strconv.FormatInt(int64(x), 10)
	case types.Uint:
		return strconv.FormatUint(uint64(x), 10)
	case types.Double:
		return strconv.FormatFloat(float64(x), 'g', -1, 64)
	case types.Bool:
		return strconv.FormatBool(bool(x))
	case types.Null:
		return "null"
	}
	if b, err := json.Marshal(native(v)); err == nil {
		return string(b)
	}
	return fmt.Sprint(v.Value())
}

// native converts a CEL value to the plain Go value of its JSON form.
func native(v ref.Val) any {
	switch x := v.(type) {
	case types.String:
		return string(x)
	case types.Int:
		return int64(x)
	case types.Uint:
		return uint64(x)
	case types.Double:
		return float64(x)
	case types.Bool:
		return bool(x)
	case types.Null:
		return nil
	case traits.Lister:
		n, _ := x.Size().(types.Int)
		out := make([]any, 0, int(n))
		for i := types.Int(0); i < n; i++ {
			out = append(out, native(x.Get(i)))
		}
		return out
	case traits.Mapper:
		out := map[string]any{}
		for it := x.Iterator(); it.HasNext() == types.True; {
			k := it.Next()
			out[fmt.Sprint(k.Value())] = native(x.Get(k))
		}
		return out
	}
	return v.Value()
}

// rule is a compiled Rule.
type rule struct {
	expr *expr
	each *expr
	msg  *template
	stop bool
}

// validator is a compiled Validator.
type validator struct {
	schema *jsonschema.Schema
	rules  []rule
}

// problems returns what is wrong with an output, in order: the schema's violations first, then
// each rule that fails. output is the decoded JSON (json.Unmarshal into any), raw its text.
func (v *validator) problems(raw []byte, output, input, ideal any) []string {
	if v == nil {
		return nil
	}
	var out []string
	if v.schema != nil {
		out = append(out, Violations(v.schema, raw)...)
	}
	vars := map[string]any{"output": output, "input": input, "ideal": ideal, "item": nil}
	for _, r := range v.rules {
		failed := false
		if r.each == nil {
			if !r.expr.holds(vars) {
				out = append(out, r.msg.render(vars))
				failed = true
			}
		} else {
			items, err := r.each.eval(vars)
			var list []any
			if err == nil {
				list, err = toList(items)
			}
			if err != nil {
				out = append(out, r.msg.render(vars))
				failed = true
			}
			for _, it := range list {
				iv := map[string]any{"output": output, "input": input, "ideal": ideal, "item": it}
				if !r.expr.holds(iv) {
					out = append(out, r.msg.render(iv))
					failed = true
				}
			}
		}
		if failed && r.stop {
			break
		}
	}
	return out
}

// toList converts a CEL list to Go values.
func toList(v ref.Val) ([]any, error) {
	if _, ok := v.(traits.Lister); !ok {
		return nil, fmt.Errorf("each gives %s, not a list", v.Type())
	}
	return native(v).([]any), nil
}
