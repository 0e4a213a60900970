package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/taskfile"
)

// TestBuiltinsLoadFromTheirFiles checks that each built-in task is the task of its embedded
// task file, and that the file read by itself (as a user would copy it) gives the same task.
func TestBuiltinsLoadFromTheirFiles(t *testing.T) {
	for _, n := range Names() {
		task, _ := Get(n)
		if task.File == nil || task.Ideal == nil {
			t.Fatalf("%s: not read from a task file, or without its ideal agent", n)
		}
		data, ok := BuiltinFile(n)
		if !ok {
			t.Fatalf("%s: no embedded task file", n)
		}
		f, err := ParseFile(n+".yaml", data)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if f.Digest() != task.File.Digest() || f.Name != n {
			t.Errorf("%s: the embedded file is not the registered task's", n)
		}
		if _, err := os.Stat("builtin/" + n + ".yaml"); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
}

func TestFixtureTools(t *testing.T) {
	f, err := LoadFile("../taskfile/testdata/minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	task, err := FromFile(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	fetch, _ := task.ToolByName("fetch_clause")
	inst := &task.Instances[0]
	ctx := context.Background()
	out, err := fetch.Exec(ctx, inst, json.RawMessage(`{"clause":"termination","contract_id":"C-1"}`))
	if err != nil || string(out) != `{"notice_days":30,"text":"Either party may terminate on 30 days notice."}` {
		t.Errorf("fetch_clause(C-1 termination) = %s, %v", out, err)
	}
	if _, err := fetch.Exec(ctx, inst, json.RawMessage(`{"clause":"liability","contract_id":"C-1"}`)); err == nil || err.Error() != "fetch_clause: no such clause" {
		t.Errorf("fetch_clause(liability) error = %v, want the fixture's error row", err)
	}
	record, _ := task.ToolByName("record_finding")
	if _, err := record.Exec(ctx, inst, json.RawMessage(`{"contract_id":"C-1"}`)); !errors.Is(err, ErrNotFound) {
		t.Errorf("record_finding without a matching row: error = %v, want ErrNotFound", err)
	}
	if o := fetch.Origin(); o.Transport != "fixtures" || o.Version == "" {
		t.Errorf("Origin() = %+v, want the fixtures and the task's digest", o)
	}
	if want := "Review contract C-1.\n\nInput:\n{\"contract_id\":\"C-1\"}"; inst.Prompt != want {
		t.Errorf("prompt = %q, want the input after the prompt", inst.Prompt)
	}
	if !task.Check(inst, json.RawMessage(`{"status":"recorded","compliant":true}`)) || task.Check(inst, json.RawMessage(`{"status":"recorded","compliant":false}`)) {
		t.Error("Check does not compare with the ideal output")
	}
}

func TestResourcesOf(t *testing.T) {
	res := resourcesOf(mustResources(t, `[{"arg":"/path"},{"arg":"/out","optional":true},{"arg":"/lists","list":true,"prefix":"w/","default":["a","b"]}]`))
	tests := []struct {
		give string
		want []string
	}{
		{`{"path":"data/x"}`, []string{"data/x", "w/a", "w/b"}},
		{`{"path":"data/x","out":"r/x","lists":["c"]}`, []string{"data/x", "r/x", "w/c"}},
		{`{"out":""}`, []string{"", "w/a", "w/b"}},
		{`{"path":["data/x"]}`, []string{""}},
		{`{"path":"data/x","lists":"c"}`, []string{""}},
		{`"not an object"`, []string{""}},
	}
	for _, tt := range tests {
		if got := res(json.RawMessage(tt.give)); !slices.Equal(got, tt.want) {
			t.Errorf("Resources(%s) = %q, want %q", tt.give, got, tt.want)
		}
	}
}

func mustResources(t *testing.T, s string) []taskfile.Resource {
	t.Helper()
	var rs []taskfile.Resource
	if err := json.Unmarshal([]byte(s), &rs); err != nil {
		t.Fatal(err)
	}
	return rs
}

var _ = events.Canonical
