package events

import (
	"fmt"
	"testing"
)

// benchOutput is a tool result of the shape the load generator's carry (internal/loadgen):
// invoice line items, each with a string, an integer and a decimal, in canonical form.
func benchOutput(lines int) []byte {
	items := make([]map[string]any, lines)
	for i := range items {
		items[i] = map[string]any{"sku": fmt.Sprintf("SKU-%05d", 7919*i%100000), "qty": 1 + i%20,
			"unit_price": float64(12345+977*i) / 100, "description": "office supplies, assorted\n\"A4\""}
	}
	return MustCanonical(map[string]any{"ok": true, "step": "extract_fields", "data": items})
}

// BenchmarkCheckCanonical is Validate's check that a JSON value an event carries is canonical
// (a tool result of 16 line items, about 1.5 kB); one op is one check.
func BenchmarkCheckCanonical(b *testing.B) {
	out := benchOutput(16)
	b.SetBytes(int64(len(out)))
	b.ReportAllocs()
	b.ResetTimer()
	c0 := cpuTime()
	for i := 0; i < b.N; i++ {
		if err := checkCanonical("payload.output", out, false); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, c0)
}
