package events

import (
	"os"
	"testing"
)

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
	for i := 0; i < b.N; i++ {
		if _, err := Decode(evs[i%len(evs)]); err != nil {
			b.Fatal(err)
		}
	}
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
	for i := 0; i < b.N; i++ {
		if err := checkText(evs[i%len(evs)]); err != nil {
			b.Fatal(err)
		}
	}
}
