package simllm

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/dittolab/ditto/internal/contextmgr"
	"github.com/dittolab/ditto/internal/llm"
	"github.com/dittolab/ditto/internal/tasks"
)

// blindCases are requests of every kind a harness sends, taken from real driven runs: the first
// turn, turns after tool results (successes and failures), a forced tool, a free-text plan
// request and a structured plan request.
func blindCases(t *testing.T) map[string][]byte {
	t.Helper()
	s := mustServer(t, Config{})
	cases := map[string][]byte{}
	all := []*tasks.Task{untaughtTask(t)} // a task file the personas were never taught
	for _, name := range tasks.Names() {
		task, _ := tasks.Get(name)
		all = append(all, task)
	}
	for _, task := range all {
		name := task.Name
		for _, o := range []struct {
			label string
			opts  runOpts
		}{
			{"free", runOpts{textPlan: true}},
			{"forced", runOpts{forced: true}},
			{"jsonplan", runOpts{jsonPlan: true, forced: true}},
		} {
			l := drive(t, s, "sim-wobbly", task, &task.Instances[len(task.Instances)-1], 11, o.opts)
			// Rebuild the requests of turns 1..3 from the driven conversation.
			for cut := 2; cut <= min(len(l.messages), 7); cut++ {
				req := map[string]any{"model": "sim-wobbly", "seed": 11, "messages": l.messages[:cut], "tools": toolsOf(task)}
				if o.opts.jsonPlan && cut == 2 {
					delete(req, "tools")
					req["response_format"] = map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "plan", "schema": planSchema}}
				}
				if o.opts.forced && cut > 2 {
					req["tool_choice"] = map[string]any{"type": "function", "function": map[string]any{"name": task.Tools[0].Name}}
				}
				b, _ := json.Marshal(req)
				cases[name+"/"+o.label+"/"+string(rune('0'+cut))] = b
			}
		}
	}
	// Coding requests as context management and planning leave them (see context_test.go).
	in, _, wrong := ctxInstance(t)
	pre, steps := ctxRun(t, in, wrong)
	for label, req := range map[string]*chatRequest{
		"coding/T0":      codingReq("sim-wobbly", 11, append(append([]llm.Message(nil), pre...), steps...)),
		"coding/T1":      codingReq("sim-wobbly", 11, managed(t, contextmgr.T1, pre, steps)),
		"coding/T2":      codingReq("sim-wobbly", 11, managed(t, contextmgr.T2, pre, steps), contextmgr.RecallToolName),
		"coding/plan":    codingReq("sim-wobbly", 11, append(append([]llm.Message(nil), pre...), llm.Message{Role: llm.RoleUser, Content: contextmgr.Reminder}), contextmgr.PlanToolName),
		"coding/summary": codingReq("sim-wobbly", 11, contextmgr.SummaryRequest("sim-wobbly", "", steps, 256).Messages),
	} {
		if label == "coding/summary" {
			req.Tools = nil
		}
		b, _ := json.Marshal(req)
		cases[label] = b
	}
	return cases
}

// leak adds to a request body every field through which a harness might leak the condition,
// study or run.
func leak(t *testing.T, body []byte, condition string) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	m["condition"] = condition
	m["study"] = "study-" + condition
	m["run_id"] = "run-" + condition
	m["harness"] = map[string]any{"structured_planning": condition == "harness_sp", "forced_tool": condition != "baseline"}
	m["metadata"] = map[string]any{"condition": condition, "study": "s", "run": "r"}
	m["user"] = "ditto-" + condition
	m["store"] = true
	m["parallel_tool_calls"] = false
	out, _ := json.MarshalIndent(m, "", "    ") // another layout, keys re-sorted
	return out
}

// TestConditionBlind: identical requests with identical seeds give byte-identical responses
// whatever the condition the sender is under, whichever channel might carry it: HTTP headers,
// URL query, unknown body fields, the request's JSON layout, the API key, or another server
// instance.
func TestConditionBlind(t *testing.T) {
	cases := blindCases(t)
	if len(cases) < 20 {
		t.Fatalf("only %d request cases", len(cases))
	}
	a := httptest.NewServer(mustServer(t, Config{}))
	defer a.Close()
	b := httptest.NewServer(mustServer(t, Config{})) // a second, independent instance
	defer b.Close()
	post := func(base, query string, body []byte, hdr map[string]string) []byte {
		req, _ := http.NewRequest("POST", base+"/v1/chat/completions"+query, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := a.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, out)
		}
		return out
	}
	for _, name := range sortedKeys(cases) {
		body := cases[name]
		want := post(a.URL, "", body, nil)
		for _, cond := range []string{"baseline", "harness", "harness_sp"} {
			hdr := map[string]string{
				"Authorization":     "Bearer key-for-" + cond,
				"X-Ditto-Condition": cond, "X-Ditto-Study": "study-" + cond, "X-Ditto-Run": "run-" + cond,
				"OpenAI-Organization": cond, "User-Agent": "ditto-worker/" + cond,
			}
			for _, got := range [][]byte{
				post(a.URL, "", body, hdr),
				post(a.URL, "?condition="+cond+"&run=7", body, nil),
				post(a.URL, "", leak(t, body, cond), nil),
				post(b.URL, "", leak(t, body, cond), hdr),
			} {
				if !bytes.Equal(got, want) {
					t.Fatalf("%s under %s: response\n%s\nwant byte-identical\n%s", name, cond, got, want)
				}
			}
		}
	}
}

// TestSeedIsTheOnlyRandomness: the responses do vary with the seed (so the identity above is
// not the trivial one of a constant answer), and without a seed they vary between identical
// requests as a real endpoint's do.
func TestSeedIsTheOnlyRandomness(t *testing.T) {
	s := mustServer(t, Config{})
	task, _ := tasks.Get("credit_ecl")
	msgs := []map[string]any{{"role": "system", "content": task.Instructions}, {"role": "user", "content": task.Instances[0].Prompt}}
	distinct := func(seeded bool) int {
		seen := map[string]bool{}
		for seed := range 60 {
			req := map[string]any{"model": "sim-wobbly", "messages": msgs, "tools": toolsOf(task)}
			if seeded {
				req["seed"] = seed
			}
			body, _ := json.Marshal(req)
			resp, _, aerr := s.complete(t.Context(), body)
			if aerr != nil {
				t.Fatal(aerr.Message)
			}
			args := resp.Choices[0].Message.ToolCalls
			key := resp.ID
			if len(args) > 0 {
				key = args[0].Function.Name + args[0].Function.Arguments
			}
			seen[key] = true
		}
		return len(seen)
	}
	if n := distinct(true); n < 2 {
		t.Errorf("60 seeds gave %d distinct first calls, want variation", n)
	}
	if n := distinct(false); n < 2 {
		t.Errorf("60 unseeded identical requests gave %d distinct answers, want variation", n)
	}
}

// conditionRE matches field names that could carry the harness condition, study or run.
var conditionRE = regexp.MustCompile(`(?i)condition|study|run|harness|experiment|component|metadata|user|extra|header|sp$`)

// TestRequestStructsCarryNoCondition walks every type a request is decoded into and checks
// that its JSON fields are exactly standard OpenAI chat-completion fields, none of which can
// carry a condition. A new field must be added here on purpose.
func TestRequestStructsCarryNoCondition(t *testing.T) {
	var fields []string
	seen := map[reflect.Type]bool{}
	var walk func(prefix string, typ reflect.Type)
	walk = func(prefix string, typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice {
			typ = typ.Elem()
		}
		if typ.Kind() == reflect.Map {
			t.Errorf("%s: a map would accept any key", prefix)
			return
		}
		if typ.Kind() != reflect.Struct || seen[typ] {
			return
		}
		seen[typ] = true
		for i := range typ.NumField() {
			f := typ.Field(i)
			if f.Anonymous {
				t.Errorf("%s: embedded %s", prefix, f.Type)
			}
			name := strings.Split(f.Tag.Get("json"), ",")[0]
			if name == "" || name == "-" {
				t.Errorf("%s.%s has no JSON name", prefix, f.Name)
				continue
			}
			fields = append(fields, prefix+name)
			walk(prefix+name+".", f.Type)
		}
	}
	walk("", reflect.TypeOf(chatRequest{}))
	slices.Sort(fields)
	want := []string{
		"max_completion_tokens", "max_tokens", "messages", "messages.content", "messages.name",
		"messages.role", "messages.tool_call_id", "messages.tool_calls", "messages.tool_calls.function",
		"messages.tool_calls.function.arguments", "messages.tool_calls.function.name",
		"messages.tool_calls.id", "messages.tool_calls.type", "model", "n", "response_format",
		"response_format.json_schema", "response_format.json_schema.description",
		"response_format.json_schema.name", "response_format.json_schema.schema",
		"response_format.json_schema.strict", "response_format.type", "seed", "stream",
		"temperature", "tool_choice", "tools", "tools.function", "tools.function.description",
		"tools.function.name", "tools.function.parameters", "tools.function.strict", "tools.type", "top_p",
	}
	if !slices.Equal(fields, want) {
		t.Errorf("request fields =\n%v\nwant\n%v", fields, want)
	}
	for _, f := range fields {
		if conditionRE.MatchString(f) {
			t.Errorf("request field %q could carry the condition", f)
		}
	}
	// The only way into a persona is respond(ctx, tasks, persona, *chatRequest): no
	// *http.Request, header or config of the sender reaches it.
	rt := reflect.TypeOf(respond)
	for i := range rt.NumIn() {
		switch in := rt.In(i); in {
		case reflect.TypeOf((*http.Request)(nil)), reflect.TypeOf(http.Header{}):
			t.Errorf("respond takes %v", in)
		}
	}
}

// TestConcurrentRequestsAreIndependent: the server keeps no state between requests, so the
// same requests sent concurrently, in any interleaving, get the same bytes as sent one by one.
func TestConcurrentRequestsAreIndependent(t *testing.T) {
	cases := blindCases(t)
	names := sortedKeys(cases)
	h := mustServer(t, Config{})
	want := map[string]string{}
	for _, n := range names {
		_, body := doRequest(t, h, "POST", "/v1/chat/completions", string(cases[n]))
		want[n] = string(body)
	}
	type result struct{ name, body string }
	out := make(chan result, 4*len(names))
	for w := range 4 {
		go func() {
			for i := range names {
				n := names[(i+w*7)%len(names)]
				req := httptest.NewRequest("POST", "/v1/chat/completions", bytes.NewReader(cases[n]))
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				out <- result{n, rec.Body.String()}
			}
		}()
	}
	for range 4 * len(names) {
		r := <-out
		if r.body != want[r.name] {
			t.Errorf("%s: concurrent response differs:\n%s\nwant\n%s", r.name, r.body, want[r.name])
		}
	}
}
