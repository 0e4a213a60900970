package events

import (
	"testing"
	"time"
)

// TestDerivedID pins the ids DerivedID gives: they are stored in the stream and the warehouse,
// so that a changed formula would store a re-exported trace a second time. The vectors are
// those of the OTLP mapper's own id function before it called DerivedID.
func TestDerivedID(t *testing.T) {
	at := time.Date(2026, 11, 30, 9, 0, 0, 123456789, time.UTC)
	const trace, span = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	tests := []struct {
		name  string
		t     time.Time
		parts []string
		want  string
	}{
		{"span role", at, []string{trace, span, "tool.called"}, "01M8NTXDQV8WJRJ9S9BGAFE5VS"},
		{"another role of the span", at, []string{trace, span, "tool.returned"}, "01M8NTXDQV9HVTHPFTQ9SSKJMT"},
		{"epoch, empty parts", time.Unix(0, 0), []string{"", "", ""}, "0000000000JTH9DMH4YA2WCYZE"},
		{"before 1970 counts as 0", time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC), []string{"a", "b", "run.started"}, "0000000000BS656QCSBF03FG9Q"},
		{"past 48 bits of milliseconds wraps", time.Date(10900, 1, 1, 0, 0, 0, 0, time.UTC), []string{"a", "b", "run.started"}, "009J2CYG00BS656QCSBF03FG9Q"},
	}
	for _, tt := range tests {
		if got := DerivedID(tt.t, tt.parts...); got != tt.want {
			t.Errorf("%s: DerivedID(%v, %q) = %q, want %q", tt.name, tt.t, tt.parts, got, tt.want)
		}
	}
}

func TestDerivedIDSeparatesParts(t *testing.T) {
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	if a, b := DerivedID(at, "ab", "c"), DerivedID(at, "a", "bc"); a == b {
		t.Errorf(`DerivedID(t, "ab", "c") = DerivedID(t, "a", "bc") = %q`, a)
	}
	if a, b := DerivedID(at, "x"), DerivedID(at.Add(time.Millisecond), "x"); a >= b {
		t.Errorf("DerivedID(t) = %q, not before DerivedID(t+1ms) = %q", a, b)
	}
}
