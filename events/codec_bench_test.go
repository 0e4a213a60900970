package events

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// cpuTime returns this process's user and system CPU time: the benchmarks report it per op
// (cpu-ns/op) beside the wall time, which other work on a shared machine inflates more.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time since c0 per op.
func reportCPU(b *testing.B, c0 time.Duration) {
	b.ReportMetric(float64((cpuTime()-c0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// goldenEvents returns the encoded golden event of every type.
func goldenEvents(tb testing.TB) [][]byte {
	tb.Helper()
	files := goldenFiles(tb)
	var out [][]byte
	for _, name := range files {
		raw, err := os.ReadFile(name)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, raw)
	}
	return out
}

// BenchmarkDecode decodes the golden event of every type; one op is one event.
func BenchmarkDecode(b *testing.B) {
	evs := goldenEvents(b)
	b.ReportAllocs()
	b.ResetTimer()
	c0 := cpuTime()
	for i := 0; i < b.N; i++ {
		if _, err := Decode(evs[i%len(evs)]); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, c0)
}

// BenchmarkEncode encodes the golden event of every type; one op is one event.
func BenchmarkEncode(b *testing.B) {
	var envs []Envelope
	for _, raw := range goldenEvents(b) {
		e, err := Decode(raw)
		if err != nil {
			b.Fatal(err)
		}
		envs = append(envs, e)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Encode(&envs[i%len(envs)]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckText checks the golden event of every type as Decode and Encode do (strings
// valid Unicode, no repeated key); one op is one event. Compare with BenchmarkDecode.
func BenchmarkCheckText(b *testing.B) {
	evs := goldenEvents(b)
	b.ReportAllocs()
	b.ResetTimer()
	c0 := cpuTime()
	for i := 0; i < b.N; i++ {
		if err := checkText(evs[i%len(evs)]); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, c0)
}
