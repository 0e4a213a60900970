package loadgen

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ProcMemory is what /proc/<pid>/status says of a process's memory, in KiB.
type ProcMemory struct {
	RSS  int64 // VmRSS: resident now
	Peak int64 // VmHWM: the peak resident set since the process started
}

// ReadProcMemory reads VmRSS and VmHWM of pid (Linux only).
func ReadProcMemory(pid int) (ProcMemory, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return ProcMemory{}, fmt.Errorf("loadgen: memory of pid %d: %w", pid, err)
	}
	return parseProcStatus(raw)
}

func parseProcStatus(raw []byte) (ProcMemory, error) {
	var m ProcMemory
	found := 0
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok || key != "VmRSS" && key != "VmHWM" {
			continue
		}
		f := strings.Fields(val) // "12345 kB"
		if len(f) != 2 || f[1] != "kB" {
			return m, fmt.Errorf("loadgen: /proc status %s: %q", key, val)
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return m, fmt.Errorf("loadgen: /proc status %s: %w", key, err)
		}
		if key == "VmRSS" {
			m.RSS = n
		} else {
			m.Peak = n
		}
		found++
	}
	if found != 2 {
		return m, fmt.Errorf("loadgen: /proc status has no VmRSS/VmHWM (a kernel thread or a zombie?)")
	}
	return m, nil
}
