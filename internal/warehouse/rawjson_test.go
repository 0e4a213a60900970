package warehouse

import (
	"encoding/json"
	"testing"
)

func TestTopLevelField(t *testing.T) {
	tests := []struct {
		name, give, want string
	}{
		{"last", `{"a":1,"payload":{"x":[1,"}"]}}`, `{"x":[1,"}"]}`},
		{"first", `{"payload":[1,2] , "b":"\"payload\""}`, `[1,2]`},
		{"nested key ignored", `{"a":{"payload":1},"payload":"s\"x"}`, `"s\"x"`},
		{"spaces", " { \"payload\" :\n 12.5e3 } ", `12.5e3`},
		{"repeated: the last wins", `{"payload":1,"payload":2}`, `2`},
		{"absent", `{"a":{"payload":1}}`, ``},
		{"not an object", `[1]`, ``},
	}
	for _, tt := range tests {
		if !json.Valid([]byte(tt.give)) {
			t.Fatalf("%s: invalid test input", tt.name)
		}
		if got := string(topLevelField([]byte(tt.give), "payload")); got != tt.want {
			t.Errorf("topLevelField(%q) = %q, want %q", tt.give, got, tt.want)
		}
	}
}
