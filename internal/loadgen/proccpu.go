package loadgen

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of the CPU times in /proc: clock ticks of USER_HZ, which Linux fixes at
// 100 per second for user space on every architecture it runs ditto on (sysconf(_SC_CLK_TCK)
// answers the same, and Go has no sysconf without cgo).
const userHZ = 100

const tick = time.Second / userHZ

// ReadProcCPU returns the CPU time pid has used since it started, user and system (the utime
// and stime of /proc/<pid>/stat; Linux only).
func ReadProcCPU(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("loadgen: cpu of pid %d: %w", pid, err)
	}
	return parseProcStat(raw)
}

// parseProcStat reads utime + stime from a /proc/<pid>/stat line: "pid (comm) state ppid …",
// utime and stime being the 14th and 15th fields. The command name may hold spaces and
// parentheses, so the fields are counted from the last ')'.
func parseProcStat(raw []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return 0, fmt.Errorf("loadgen: /proc stat %q: no command name", short(raw))
	}
	f := strings.Fields(string(raw[i+1:])) // f[0] is the state, the 3rd field
	const utime, stime = 14 - 3, 15 - 3
	if len(f) <= stime {
		return 0, fmt.Errorf("loadgen: /proc stat %q: %d fields after the command name, want > %d", short(raw), len(f), stime)
	}
	var sum int64
	for _, k := range []int{utime, stime} {
		n, err := strconv.ParseInt(f[k], 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("loadgen: /proc stat field %d %q: not a tick count", k+3, f[k])
		}
		sum += n
	}
	return time.Duration(sum) * tick, nil
}

// ReadMachineCPU returns the CPU time every process of the machine has used since boot
// (/proc/stat's first line: everything but idle and iowait), summed over the cores.
func ReadMachineCPU() (time.Duration, error) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, fmt.Errorf("loadgen: machine cpu: %w", err)
	}
	return parseMachineStat(raw)
}

// parseMachineStat reads the busy time of the "cpu" line: user nice system idle iowait irq
// softirq steal (guest time is already counted in user).
func parseMachineStat(raw []byte) (time.Duration, error) {
	line, _, _ := bytes.Cut(raw, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 9 || f[0] != "cpu" {
		return 0, fmt.Errorf("loadgen: /proc/stat first line %q: want cpu and 8 tick counts", short(line))
	}
	var busy int64
	for k := 1; k <= 8; k++ {
		n, err := strconv.ParseInt(f[k], 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("loadgen: /proc/stat cpu field %d %q: not a tick count", k, f[k])
		}
		if k != 4 && k != 5 { // idle, iowait
			busy += n
		}
	}
	return time.Duration(busy) * tick, nil
}

func short(b []byte) string {
	if len(b) > 80 {
		b = b[:80]
	}
	return string(b)
}
