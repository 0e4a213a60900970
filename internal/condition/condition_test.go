package condition_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dittolab/ditto/internal/condition"
)

func TestParse(t *testing.T) {
	all := []string{"circuit_breaker", "forced_tool", "fsm", "permission_gate", "retry", "schema_gate", "structured_planning", "validation"}
	tests := []struct {
		give    string
		want    []string
		wantErr bool
	}{
		{give: "baseline", want: []string{}},
		{give: "harness", want: []string{"circuit_breaker", "forced_tool", "fsm", "permission_gate", "retry", "schema_gate", "validation"}},
		{give: "harness_sp", want: all},
		{give: "harness-retry", want: []string{"circuit_breaker", "forced_tool", "fsm", "permission_gate", "schema_gate", "validation"}},
		{give: "baseline+schema_gate+permission_gate", want: []string{"permission_gate", "schema_gate"}},
		{give: "fsm+forced_tool", want: []string{"forced_tool", "fsm"}},
		{give: "structured_planning", want: []string{"structured_planning"}},
		{give: "harness_sp-structured_planning", want: []string{"circuit_breaker", "forced_tool", "fsm", "permission_gate", "retry", "schema_gate", "validation"}},
		{give: "", wantErr: true},
		{give: "nope", wantErr: true},
		{give: "fsm+harness", wantErr: true},
		{give: "harness+", wantErr: true},
		{give: "harness+warp_drive", wantErr: true},
		{give: "circuit_breaker+distilled_diagnostics+test_protection+bash_only", want: []string{"bash_only", "circuit_breaker", "distilled_diagnostics", "test_protection"}},
	}
	for _, tt := range tests {
		c, err := condition.Parse(tt.give)
		if tt.wantErr {
			if !errors.Is(err, condition.ErrUnknown) {
				t.Errorf("Parse(%q) error = %v, want ErrUnknown", tt.give, err)
			}
			continue
		}
		if err != nil || !slices.Equal(c.Names(), tt.want) || c.Name != tt.give || c.Limits != condition.DefaultLimits() {
			t.Errorf("Parse(%q) = %v, %v; want %v", tt.give, c.Names(), err, tt.want)
		}
	}
	c, err := condition.New("gates_only", []string{"schema_gate", "permission_gate"})
	if err != nil || !slices.Equal(c.Names(), []string{"permission_gate", "schema_gate"}) || c.Name != "gates_only" {
		t.Errorf("New = %v, %v", c.Names(), err)
	}
	if _, err := condition.New("x", []string{"bogus"}); !errors.Is(err, condition.ErrUnknown) {
		t.Errorf("New(bogus) error = %v", err)
	}
}

func ExampleParse() {
	for _, name := range []string{"baseline", "harness", "harness_sp", "harness-retry", "fsm+forced_tool"} {
		c, _ := condition.Parse(name)
		fmt.Println(name, c.Names())
	}
	// Output:
	// baseline []
	// harness [circuit_breaker forced_tool fsm permission_gate retry schema_gate validation]
	// harness_sp [circuit_breaker forced_tool fsm permission_gate retry schema_gate structured_planning validation]
	// harness-retry [circuit_breaker forced_tool fsm permission_gate schema_gate validation]
	// fsm+forced_tool [forced_tool fsm]
}

func TestParseContext(t *testing.T) {
	tests := []struct {
		give    string
		want    condition.Context
		comps   []string
		wantErr error
	}{
		{give: "bash_only+update_plan+t4_8k", want: condition.Context{Tier: "T4", Budget: 8000}, comps: []string{"bash_only", "update_plan"}},
		{give: "t0_12500", want: condition.Context{Tier: "T0", Budget: 12500}, comps: []string{}},
		{give: "distilled_diagnostics+t2_6k", want: condition.Context{Tier: "T2", Budget: 6000}, comps: []string{"distilled_diagnostics"}},
		{give: "baseline+t3_4k", want: condition.Context{Tier: "T3", Budget: 4000}, comps: []string{}},
		{give: "bash_only+t5_8k", wantErr: condition.ErrContext},
		{give: "bash_only+t1_0k", wantErr: condition.ErrContext},
		{give: "t1_8k+t2_8k", wantErr: condition.ErrContext},
		{give: "bash_only-t1_8k", wantErr: condition.ErrUnknown},
		{give: "bash_only+t1_k", wantErr: condition.ErrUnknown},
	}
	for _, tt := range tests {
		c, err := condition.Parse(tt.give)
		if tt.wantErr != nil {
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("Parse(%q) error = %v, want %v", tt.give, err, tt.wantErr)
			}
			continue
		}
		if err != nil || c.Context != tt.want || !slices.Equal(c.Names(), tt.comps) {
			t.Errorf("Parse(%q) = %+v %v, %v; want %+v %v", tt.give, c.Context, c.Names(), err, tt.want, tt.comps)
		}
		if got := c.Context.Term(); !strings.HasSuffix(tt.give, got) {
			t.Errorf("Parse(%q).Context.Term() = %q, want the term given", tt.give, got)
		}
	}
	if err := (condition.Context{Tier: "T4", Budget: 100, Soft: 90, Hard: 80}).Validate(); !errors.Is(err, condition.ErrContext) {
		t.Errorf("Validate(hard below soft) = %v, want ErrContext", err)
	}
	if err := (condition.Context{}).Validate(); err != nil {
		t.Errorf("Validate(unmanaged) = %v, want nil", err)
	}
}
