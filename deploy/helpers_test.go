package deploy_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strconv"
	"testing"

	"gopkg.in/yaml.v3"
)

// loadYAMLDocs decodes every document of a YAML file.
func loadYAMLDocs(t *testing.T, path string) []map[string]any {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	var docs []map[string]any
	for {
		var d map[string]any
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: document %d: %v", path, len(docs)+1, err)
		}
		if d != nil {
			docs = append(docs, d)
		}
	}
	if len(docs) == 0 {
		t.Fatalf("%s: no YAML documents", path)
	}
	return docs
}

// get walks maps by key and lists by decimal index; nil when the path does not exist.
func get(v any, path ...string) any {
	for _, p := range path {
		switch x := v.(type) {
		case map[string]any:
			v = x[p]
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

func str(v any, path ...string) string {
	switch x := get(v, path...).(type) {
	case string:
		return x
	case int:
		return strconv.Itoa(x)
	case bool:
		return strconv.FormatBool(x)
	}
	return ""
}

func list(v any, path ...string) []any {
	l, _ := get(v, path...).([]any)
	return l
}

func itoa(i int) string { return strconv.Itoa(i) }

func portOf(t *testing.T, s string) int {
	t.Helper()
	p, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("port %q: %v", s, err)
	}
	return p
}
