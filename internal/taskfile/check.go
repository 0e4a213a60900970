package taskfile

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"

	"cel.dev/cel-go/cel"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// program is what Parse compiles from a task file: the argument schemas, each state's
// validator and routes, and the final output's validator and check.
type program struct {
	args   map[string]*jsonschema.Schema // by tool; absent for an MCP tool without arguments
	states map[string]*stateProgram
	output *validator
	check  *expr
	final  string // the final tool
	start  string
}

type stateProgram struct {
	validate *validator
	routes   []routeProgram
}

type routeProgram struct {
	when *expr // nil: always
	to   string
}

// check checks the consistency of a file that passed the schema and compiles it, adding a
// problem for everything wrong. The program it returns is complete only when no problem was
// added.
func check(t *Task, opts Options, ps *problems) *program {
	p := &program{args: map[string]*jsonschema.Schema{}, states: map[string]*stateProgram{}}
	if t.Coding != nil {
		checkCoding(t, opts, ps)
		return p
	}
	tools := checkTools(t, opts, p, ps)
	states := map[string]int{}
	for i, s := range t.States {
		if j, dup := states[s.Name]; dup {
			ps.add(indexPath("states", i)+".name", "duplicate state %q (also states[%d])", s.Name, j)
			continue
		}
		states[s.Name] = i
	}
	p.start = t.Start
	if p.start == "" {
		p.start = t.States[0].Name
	} else if _, ok := states[t.Start]; !ok {
		ps.add("start", "unknown state %q (states: %s)", t.Start, strings.Join(stateNames(t), ", "))
	}
	usedBy := map[string][]string{}
	for i, s := range t.States {
		path := indexPath("states", i)
		if _, ok := tools[s.Tool]; !ok {
			ps.add(path+".tool", "unknown tool %q (tools: %s)", s.Tool, strings.Join(toolNames(t), ", "))
		} else {
			usedBy[s.Tool] = append(usedBy[s.Tool], s.Name)
		}
		seen := map[string]bool{}
		for j, n := range s.Next {
			if _, ok := states[n]; !ok {
				ps.add(indexPath(path+".next", j), "unknown state %q (states: %s)", n, strings.Join(stateNames(t), ", "))
			}
			if seen[n] {
				ps.add(indexPath(path+".next", j), "%q is listed twice", n)
			}
			seen[n] = true
		}
		sp := &stateProgram{validate: compileValidator(mustEnv(stateEnv), path+".validate", s.Validate, ps)}
		switch {
		case len(s.Next) > 1 && len(s.Routes) == 0:
			ps.add(path+".routes", "state %s has %d successors and needs routes to choose among them", s.Name, len(s.Next))
		case len(s.Next) <= 1 && len(s.Routes) > 0:
			ps.add(path+".routes", "routes choose among several successors; state %s has %d", s.Name, len(s.Next))
		}
		for j, r := range s.Routes {
			rp := indexPath(path+".routes", j)
			if !seen[r.To] {
				ps.add(rp+".to", "%q is not one of next (%s)", r.To, strings.Join(s.Next, ", "))
			}
			rt := routeProgram{to: r.To}
			if r.When != "" {
				e, err := compileExpr(mustEnv(stateEnv), r.When, cel.BoolType)
				if err != nil {
					ps.add(rp+".when", "%v", err)
				}
				rt.when = e
			}
			sp.routes = append(sp.routes, rt)
		}
		p.states[s.Name] = sp
	}
	for i, tl := range t.Tools {
		switch users := usedBy[tl.Name]; len(users) {
		case 1:
		case 0:
			ps.add(indexPath("tools", i), "tool %s is required by no state: every tool belongs to exactly one state", tl.Name)
		default:
			ps.add(indexPath("tools", i), "tool %s is required by states %s: every tool belongs to exactly one state", tl.Name, strings.Join(users, " and "))
		}
	}
	if _, ok := states[p.start]; ok {
		checkGraph(t, p.start, states, ps)
	}
	checkOutput(t, p, usedBy, ps)
	checkInstances(t, p, ps)
	return p
}

func mustEnv(f func() (*cel.Env, error)) *cel.Env {
	env, err := f()
	if err != nil {
		panic("taskfile: CEL environment: " + err.Error()) // fixed options: a build-time fact
	}
	return env
}

// checkTools checks the tools and their servers and compiles the argument schemas; it returns
// the tools by name.
func checkTools(t *Task, opts Options, p *program, ps *problems) map[string]*Tool {
	for _, name := range sortedKeys(t.Servers) {
		s := t.Servers[name]
		path := childPath("servers", name)
		switch {
		case s.MCP != nil && s.MCP.URL != "":
			checkURL(path+".mcp.url", s.MCP.URL, ps)
		case s.HTTP != nil:
			checkURL(path+".http.base_url", s.HTTP.BaseURL, ps)
		}
	}
	tools := map[string]*Tool{}
	for i := range t.Tools {
		tl := &t.Tools[i]
		path := indexPath("tools", i)
		if _, dup := tools[tl.Name]; dup {
			ps.add(path+".name", "duplicate tool %q", tl.Name)
			continue
		}
		tools[tl.Name] = tl
		var srv *Server
		if tl.Server != "" {
			s, ok := t.Servers[tl.Server]
			if !ok {
				ps.add(path+".server", "unknown server %q (servers: %s)", tl.Server, strings.Join(sortedKeys(t.Servers), ", "))
			} else {
				srv = &s
			}
		}
		if tl.Endpoint != "" && (srv == nil || srv.HTTP == nil) {
			ps.add(path+".endpoint", "an endpoint is for a tool of an http server")
		}
		if tl.Remote != "" && (srv == nil || srv.MCP == nil) {
			ps.add(path+".remote", "remote names the tool on an mcp server")
		}
		if tl.Builtin != "" && opts.Builtin != nil && !opts.Builtin(tl.Builtin) {
			ps.add(path+".builtin", "unknown builtin tool %q", tl.Builtin)
		}
		if len(tl.Arguments) == 0 {
			if srv == nil || srv.MCP == nil {
				ps.add(path+".arguments", "required: only a tool of an MCP server may take its argument schema from the server")
			}
		} else if s, err := CompileSchema("tools/"+tl.Name, tl.Arguments); err != nil {
			ps.add(path+".arguments", "not a valid JSON Schema: %s", oneLine(err.Error()))
		} else {
			p.args[tl.Name] = s
		}
		checkResources(path, tl, ps)
		for j, f := range tl.Fixtures {
			checkFixture(indexPath(path+".fixtures", j), tl, f, ps)
		}
	}
	return tools
}

func checkURL(path, raw string, ps *problems) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		ps.add(path, "not an http(s) URL with a host: %q", raw)
	}
}

// checkResources checks that each resource argument is an argument the schema declares (when
// it declares properties).
func checkResources(path string, tl *Tool, ps *problems) {
	props := schemaProperties(tl.Arguments)
	for j, r := range tl.Permission.Resources {
		first := strings.SplitN(strings.TrimPrefix(r.Arg, "/"), "/", 2)[0]
		first = strings.ReplaceAll(strings.ReplaceAll(first, "~1", "/"), "~0", "~")
		if props != nil && !props[first] && !r.Optional {
			ps.add(indexPath(path+".permission.resources", j)+".arg", "%s is not an argument of %s (arguments: %s)", r.Arg, tl.Name, strings.Join(sortedKeys(props), ", "))
		}
	}
}

// checkFixture checks that a fixture row's arguments are arguments of the tool.
func checkFixture(path string, tl *Tool, f Fixture, ps *problems) {
	props := schemaProperties(tl.Arguments)
	if props == nil || len(f.Args) == 0 {
		return
	}
	var args map[string]json.RawMessage
	if json.Unmarshal(f.Args, &args) != nil {
		return // the schema says it is an object
	}
	for _, k := range sortedKeys(args) {
		if !props[k] {
			ps.add(childPath(path+".args", k), "not an argument of %s (arguments: %s)", tl.Name, strings.Join(sortedKeys(props), ", "))
		}
	}
}

// schemaProperties returns the names a schema declares under "properties", or nil when it
// declares none.
func schemaProperties(raw json.RawMessage) map[string]bool {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(raw, &s) != nil || s.Properties == nil {
		return nil
	}
	out := map[string]bool{}
	for k := range s.Properties {
		out[k] = true
	}
	return out
}

// checkGraph reports states not reachable from start and reachable states with no path to a
// terminal state.
func checkGraph(t *Task, start string, index map[string]int, ps *problems) {
	reach := map[string]bool{start: true}
	queue := []string{start}
	for len(queue) > 0 {
		s := t.States[index[queue[0]]]
		queue = queue[1:]
		for _, n := range s.Next {
			if _, ok := index[n]; ok && !reach[n] {
				reach[n] = true
				queue = append(queue, n)
			}
		}
	}
	// States that can reach a terminal state: a fixed point over the reversed edges.
	ends := map[string]bool{}
	for changed := true; changed; {
		changed = false
		for _, s := range t.States {
			if ends[s.Name] {
				continue
			}
			ok := len(s.Next) == 0
			for _, n := range s.Next {
				ok = ok || ends[n]
			}
			if ok {
				ends[s.Name] = true
				changed = true
			}
		}
	}
	for i, s := range t.States {
		path := indexPath("states", i)
		switch {
		case !reach[s.Name]:
			ps.add(path, "state %s is unreachable from the start state %s", s.Name, start)
		case !ends[s.Name]:
			ps.add(path, "state %s has no path to a terminal state (one without next)", s.Name)
		}
	}
}

// checkOutput resolves the final tool and compiles the output's validator and check.
func checkOutput(t *Task, p *program, usedBy map[string][]string, ps *problems) {
	o := t.Output
	if o.Tool != "" {
		if _, ok := usedBy[o.Tool]; !ok {
			ps.add("output.tool", "unknown tool %q, or required by no state", o.Tool)
		}
		p.final = o.Tool
	} else {
		var finals []string
		for _, s := range t.States {
			if len(s.Next) == 0 && !slices.Contains(finals, s.Tool) {
				finals = append(finals, s.Tool)
			}
		}
		switch len(finals) {
		case 1:
			p.final = finals[0]
		case 0:
		default:
			ps.add("output.tool", "the terminal states require different tools (%s): name the one whose output is the run's output", strings.Join(finals, ", "))
		}
	}
	p.output = compileValidator(mustEnv(outputEnv), "output", Validator{Schema: o.Schema, Rules: o.Rules}, ps)
	if o.Check != "" {
		e, err := compileExpr(mustEnv(outputEnv), o.Check, cel.BoolType)
		if err != nil {
			ps.add("output.check", "%v", err)
		}
		p.check = e
	}
}

// checkInstances checks instance ids and that ideal outputs pass the output's schema.
func checkInstances(t *Task, p *program, ps *problems) {
	seen := map[string]int{}
	for i, in := range t.Instances {
		path := indexPath("instances", i)
		if j, dup := seen[in.ID]; dup {
			ps.add(path+".id", "duplicate instance %q (also instances[%d])", in.ID, j)
		}
		seen[in.ID] = i
		if len(in.Ideal) > 0 && p.output != nil && p.output.schema != nil {
			for _, v := range Violations(p.output.schema, in.Ideal) {
				ps.add(path+".ideal", "does not pass output.schema: %s", v)
			}
		}
	}
}

// compileValidator compiles a validator's schema and rules, adding problems under path.
func compileValidator(env *cel.Env, path string, v Validator, ps *problems) *validator {
	if len(v.Schema) == 0 && len(v.Rules) == 0 {
		return nil
	}
	out := &validator{}
	if len(v.Schema) > 0 {
		s, err := CompileSchema(strings.ReplaceAll(path, ".", "/"), v.Schema)
		if err != nil {
			ps.add(path+".schema", "not a valid JSON Schema: %s", oneLine(err.Error()))
		}
		out.schema = s
	}
	for i, r := range v.Rules {
		rp := indexPath(path+".rules", i)
		cr := rule{stop: r.Stop}
		var err error
		if cr.expr, err = compileExpr(env, r.Expr, cel.BoolType); err != nil {
			ps.add(rp+".expr", "%v", err)
		}
		if r.Each != "" {
			if cr.each, err = compileExpr(env, r.Each, cel.ListType(cel.DynType)); err != nil {
				ps.add(rp+".each", "%v", err)
			}
		}
		if cr.msg, err = compileMessage(env, r.Message); err != nil {
			ps.add(rp+".message", "%v", err)
		}
		out.rules = append(out.rules, cr)
	}
	return out
}

func stateNames(t *Task) []string {
	out := make([]string, len(t.States))
	for i, s := range t.States {
		out[i] = s.Name
	}
	return out
}

func toolNames(t *Task) []string {
	out := make([]string, len(t.Tools))
	for i, tl := range t.Tools {
		out[i] = tl.Name
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

var _ = fmt.Sprintf
