// Package personas holds the simulated models' default persona file (personas.json, embedded)
// and the names of the models it defines. It is a leaf (standard library only): the study
// planner names the simulated models through it without linking the simulator, which parses
// and serves the personas (package simllm).
package personas

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"slices"
)

//go:embed personas.json
var file []byte

// JSON returns the embedded persona file, a fresh copy.
func JSON() []byte { return bytes.Clone(file) }

// Names returns the names of the models the embedded file defines (sim-steady and
// sim-wobbly), sorted.
func Names() []string {
	var f struct {
		Personas []struct {
			Name string `json:"name"`
		} `json:"personas"`
	}
	if err := json.Unmarshal(file, &f); err != nil {
		// The embedded file is checked by TestNames and simllm's TestDefaultPersonas; reaching
		// this is a build defect.
		panic("personas: embedded personas.json: " + err.Error())
	}
	out := make([]string, 0, len(f.Personas))
	for _, p := range f.Personas {
		out = append(out, p.Name)
	}
	slices.Sort(out)
	return out
}
