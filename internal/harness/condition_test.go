package harness_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/dittolab/ditto/internal/harness"
)

func TestParseCondition(t *testing.T) {
	all := harness.ComponentNames()
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
	}
	for _, tt := range tests {
		c, err := harness.ParseCondition(tt.give)
		if tt.wantErr {
			if !errors.Is(err, harness.ErrUnknownCondition) {
				t.Errorf("ParseCondition(%q) error = %v, want ErrUnknownCondition", tt.give, err)
			}
			continue
		}
		if err != nil || !slices.Equal(c.Names(), tt.want) || c.Name != tt.give || c.Limits != harness.DefaultLimits() {
			t.Errorf("ParseCondition(%q) = %v, %v; want %v", tt.give, c.Names(), err, tt.want)
		}
	}
	c, err := harness.NewCondition("gates_only", []string{"schema_gate", "permission_gate"})
	if err != nil || !slices.Equal(c.Names(), []string{"permission_gate", "schema_gate"}) || c.Name != "gates_only" {
		t.Errorf("NewCondition = %v, %v", c.Names(), err)
	}
	if _, err := harness.NewCondition("x", []string{"bogus"}); !errors.Is(err, harness.ErrUnknownCondition) {
		t.Errorf("NewCondition(bogus) error = %v", err)
	}
}
