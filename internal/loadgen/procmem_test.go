package loadgen

import (
	"os"
	"testing"
)

func TestParseProcStatus(t *testing.T) {
	tests := []struct {
		name    string
		give    string
		want    ProcMemory
		wantErr bool
	}{
		{"both", "Name:\tnats-server\nVmPeak:\t  900 kB\nVmHWM:\t   5120 kB\nVmRSS:\t   4096 kB\n", ProcMemory{RSS: 4096, Peak: 5120}, false},
		{"kernel thread", "Name:\tkthreadd\nState:\tS\n", ProcMemory{}, true},
		{"bad unit", "VmHWM:\t5 MB\nVmRSS:\t4 kB\n", ProcMemory{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseProcStatus([]byte(tt.give))
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseProcStatus(%q) error = %v, wantErr %v", tt.give, err, tt.wantErr)
			}
			if !tt.wantErr && got != tt.want {
				t.Errorf("parseProcStatus(%q) = %+v, want %+v", tt.give, got, tt.want)
			}
		})
	}
}

func TestReadProcMemorySelf(t *testing.T) {
	m, err := ReadProcMemory(os.Getpid())
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	if m.RSS <= 0 || m.Peak < m.RSS {
		t.Errorf("ReadProcMemory(self) = %+v, want 0 < RSS <= Peak", m)
	}
}
