package loadgen

import (
	"math"
	"os"
	"testing"
	"time"
)

func TestParseProcStat(t *testing.T) {
	// Fields after the command name: state ppid pgrp session tty tpgid flags minflt cminflt
	// majflt cmajflt utime stime cutime cstime …
	const rest = " S 1 2 3 0 -1 4194560 900 0 0 0 1234 566 7 8 20 0 9 0 100 2000000 500\n"
	tests := []struct {
		name    string
		give    string
		want    time.Duration
		wantErr bool
	}{
		{"nats-server", "4242 (nats-server)" + rest, 18 * time.Second, false}, // (1234+566) ticks of 10 ms
		{"spaces and parens in the name", "7 (a) b (c))" + rest, 18 * time.Second, false},
		{"children's time not counted", "7 (x) S 1 2 3 0 -1 0 0 0 0 0 0 1 99 99\n", 10 * time.Millisecond, false},
		{"no command name", "7 x S 1 2 3", 0, true},
		{"too few fields", "7 (x) S 1 2 3 0 -1 0 0 0 0 0 12\n", 0, true},
		{"not a number", "7 (x) S 1 2 3 0 -1 0 0 0 0 0 12 ab 0 0\n", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseProcStat([]byte(tt.give))
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseProcStat(%q) error = %v, wantErr %v", tt.give, err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("parseProcStat(%q) = %v, want %v", tt.give, got, tt.want)
			}
		})
	}
}

func TestParseMachineStat(t *testing.T) {
	tests := []struct {
		name    string
		give    string
		want    time.Duration
		wantErr bool
	}{
		// user 100 nice 20 system 30 idle 5000 iowait 400 irq 1 softirq 2 steal 3 guest 7 guest_nice 0
		{"busy = all but idle and iowait", "cpu  100 20 30 5000 400 1 2 3 7 0\ncpu0 50 10 15 2500 200 0 1 1 3 0\n", 1560 * time.Millisecond, false},
		{"old kernel without guest", "cpu 1 0 1 9 0 0 0 0\n", 20 * time.Millisecond, false},
		{"not the cpu line", "intr 12 3 4 5 6 7 8 9\n", 0, true},
		{"too short", "cpu 1 2 3\n", 0, true},
		{"negative", "cpu 1 2 3 4 5 6 7 -8\n", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseMachineStat([]byte(tt.give))
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseMachineStat(%q) error = %v, wantErr %v", tt.give, err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("parseMachineStat(%q) = %v, want %v", tt.give, got, tt.want)
			}
		})
	}
}

func TestCPUUse(t *testing.T) {
	// 20 s of CPU at the first publish, 80 s at the end of 60 s of publishing, 86 s after the
	// drain; 1,200,000 events published: 1 core while publishing, 66 s in all, 55 µs an event.
	got := cpuUse("analyzer", 42, 20*time.Second, 80*time.Second, 86*time.Second, time.Minute, 1_200_000)
	want := CPU{Name: "analyzer", PID: 42, AtStart: 20 * time.Second, Publishing: time.Minute, Cores: 1, Total: 66 * time.Second, PerEvent: 55}
	if got != want {
		t.Errorf("cpuUse = %+v, want %+v", got, want)
	}
	// Nothing published (a run cut short before its first event): no rates, no division by 0.
	got = cpuUse("p", 1, time.Second, time.Second, 2*time.Second, 0, 0)
	if got.Cores != 0 || got.PerEvent != 0 || got.Total != time.Second || math.IsNaN(got.Cores) {
		t.Errorf("cpuUse without events = %+v, want total 1s and no rates", got)
	}
}

func TestReadProcCPUSelf(t *testing.T) {
	before, err := ReadProcCPU(os.Getpid())
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	if _, err := ReadMachineCPU(); err != nil {
		t.Fatalf("ReadMachineCPU = %v", err)
	}
	// Work until the kernel has counted at least two ticks more (a deadline, not a fixed time).
	x := 1.0
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		for i := 0; i < 1_000_000; i++ {
			x = math.Sqrt(x + float64(i))
		}
		if now, err := ReadProcCPU(os.Getpid()); err != nil || now >= before+2*tick {
			if err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Errorf("ReadProcCPU(self) stayed at %v after a minute of work (x=%v)", before, x)
}

func TestReadProcCPUGone(t *testing.T) {
	if _, err := ReadProcCPU(1 << 30); err == nil {
		t.Error("ReadProcCPU(no such pid) = nil error, want one")
	}
}
