package tasks

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"math"
	"path"
	"regexp"
	"strings"
	"sync"
)

//go:embed fixtures
var fixtureFS embed.FS

// store is a task's virtual read-only dataset store: dataset path → raw JSON.
type store map[string]json.RawMessage

// loadStore reads fixtures/<task>/*.json into a store keyed "data/<task>/<file stem>", in file
// name order (embed.FS lists directories sorted), and returns the stems in that order.
func loadStore(task string) (store, []string) {
	dir := "fixtures/" + task
	entries, err := fixtureFS.ReadDir(dir)
	if err != nil {
		panic("tasks: fixtures for " + task + ": " + err.Error()) // embedded: a build-time fact
	}
	s := store{}
	var stems []string
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		b, err := fixtureFS.ReadFile(dir + "/" + e.Name())
		if err != nil {
			panic("tasks: " + err.Error())
		}
		stem := strings.TrimSuffix(e.Name(), ".json")
		s[datasetPath(task, stem)] = json.RawMessage(b)
		stems = append(stems, stem)
	}
	return s, stems
}

func datasetPath(task, id string) string { return "data/" + task + "/" + id }
func reportPath(task, id string) string  { return "reports/" + task + "/" + id }

// parsed caches decoded datasets by type and path: fixtures are immutable, so each is decoded
// once per process instead of on every tool call. Callers must not modify what they get.
var parsed sync.Map // kind + "\x00" + path → decoded value

// decoded returns the dataset at p decoded into a T, from the cache when possible.
func decoded[T any](s store, kind, p string) (T, error) {
	var zero T
	raw, err := s.get(p)
	if err != nil {
		return zero, err
	}
	key := kind + "\x00" + path.Clean(p)
	if v, ok := parsed.Load(key); ok {
		return v.(T), nil
	}
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return zero, fmt.Errorf("tasks: %s is not a %s: %w", p, kind, err)
	}
	parsed.Store(key, v)
	return v, nil
}

// get resolves a dataset path (cleaned) in the store.
func (s store) get(p string) (json.RawMessage, error) {
	if p == "" {
		return nil, fmt.Errorf("%w: path is required", ErrBadArguments)
	}
	b, ok := s[path.Clean(p)]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, p)
	}
	return b, nil
}

// decodeArgs decodes tool arguments into v. Unknown fields are ignored, as a lenient real API
// would do: rejecting them is the argument-schema gate's job, not the tool's.
func decodeArgs(args json.RawMessage, v any) error {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	if err := json.Unmarshal(args, v); err != nil {
		return fmt.Errorf("%w: %v", ErrBadArguments, err)
	}
	return nil
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic("tasks: marshal: " + err.Error()) // only plain structs and maps are marshalled
	}
	return b
}

// round rounds x half away from zero to places decimals.
func round(x float64, places int) float64 {
	p := math.Pow(10, float64(places))
	r := math.Round(x*p) / p
	if r == 0 {
		return 0 // no -0 in outputs
	}
	return r
}

var pathRes sync.Map // task name → *regexp.Regexp

// pathIn finds the first dataset path of the task in a prompt (the Ideal agent reads it there).
func pathIn(task, prompt string) string {
	re, ok := pathRes.Load(task)
	if !ok {
		re, _ = pathRes.LoadOrStore(task, regexp.MustCompile(`data/`+regexp.QuoteMeta(task)+`/[A-Za-z0-9_-]+`))
	}
	return re.(*regexp.Regexp).FindString(prompt)
}

// lastOutput returns the output of the last successful call of tool in results.
func lastOutput(results []ToolResult, tool string) (json.RawMessage, bool) {
	for i := len(results) - 1; i >= 0; i-- {
		if results[i].Tool == tool && results[i].Output != nil && results[i].Err == "" {
			return results[i].Output, true
		}
	}
	return nil, false
}
