package warehousetest

import (
	"testing"
	"time"
)

func TestFormatValue(t *testing.T) {
	tests := []struct {
		name string
		give any
		want string
	}{
		{"null", nil, "NULL"},
		{"bytes", []byte("a\"b"), `"a\"b"`},
		{"time in UTC", time.Date(2026, 11, 30, 10, 0, 0, 5e8, time.FixedZone("x", 3600)), "2026-11-30T09:00:00.5Z"},
		{"float six digits", 1.0 / 3, "0.333333"},
		{"int", int64(42), "42"},
		{"string", "s", "s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FormatValue(tt.give); got != tt.want {
				t.Errorf("FormatValue(%#v) = %q, want %q", tt.give, got, tt.want)
			}
		})
	}
}

func TestStripHeader(t *testing.T) {
	give := "-- name: x\n  -- inputs: none\nSELECT 1\n"
	if got, want := stripHeader(give), "SELECT 1\n\n"; got != want {
		t.Errorf("stripHeader(%q) = %q, want %q", give, got, want)
	}
}
