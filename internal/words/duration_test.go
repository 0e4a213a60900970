package words

import (
	"testing"
	"time"
)

func TestDuration(t *testing.T) {
	tests := []struct {
		give time.Duration
		want string
	}{
		{30 * time.Minute, "30 minutes"},
		{time.Minute, "1 minute"},
		{90 * time.Minute, "1 hour 30 minutes"},
		{76*time.Second + 234*time.Millisecond, "1 minute 16 seconds"},
		{59*time.Minute + 59600*time.Millisecond, "1 hour"},
		{49 * time.Hour, "2 days 1 hour"},
		{7 * 24 * time.Hour, "7 days"},
		{45 * time.Second, "45 seconds"},
		{1500 * time.Millisecond, "1.5 seconds"},
		{250 * time.Millisecond, "250 milliseconds"},
		{0, "0 seconds"},
	}
	for _, tt := range tests {
		if got := Duration(tt.give); got != tt.want {
			t.Errorf("Duration(%v) = %q, want %q", tt.give, got, tt.want)
		}
	}
}
