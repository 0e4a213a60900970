package personas_test

import (
	"slices"
	"testing"

	"github.com/dittolab/ditto/internal/simllm/personas"
)

func TestNames(t *testing.T) {
	want := []string{"sim-steady", "sim-wobbly"}
	if got := personas.Names(); !slices.Equal(got, want) {
		t.Errorf("Names() = %q, want %q", got, want)
	}
}

func TestJSONIsACopy(t *testing.T) {
	a := personas.JSON()
	a[0] = 'x'
	if b := personas.JSON(); b[0] == 'x' {
		t.Error("JSON() returns the embedded bytes themselves, want a copy")
	}
}
