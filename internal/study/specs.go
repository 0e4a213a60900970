package study

import (
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"strings"
)

// specFS holds the shipped specs: research.json (the research design, N = 100) and small.json
// (the same design with N = 3, for demos and tests).
//
//go:embed specs/*.json
var specFS embed.FS

// ShippedSpecs lists the names of the shipped specs ("research", "small").
func ShippedSpecs() []string {
	entries, _ := fs.ReadDir(specFS, "specs")
	var out []string
	for _, e := range entries {
		out = append(out, strings.TrimSuffix(e.Name(), ".json"))
	}
	slices.Sort(out)
	return out
}

// ShippedSpec returns the raw JSON of a shipped spec by name.
func ShippedSpec(name string) ([]byte, error) {
	b, err := specFS.ReadFile("specs/" + name + ".json")
	if err != nil {
		return nil, fmt.Errorf("study: no shipped spec %q (have %v)", name, ShippedSpecs())
	}
	return b, nil
}
