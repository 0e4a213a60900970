package wire

import (
	"reflect"
	"testing"
	"time"
)

// What Append writes is what scanInOrder reads (the usual event's path), with or without
// the optional members, and Scan's member-by-member reading of the same bytes agrees with it.
func TestScanInOrderReadsWhatAppendWrites(t *testing.T) {
	base := Envelope{Schema: 3, ID: "01JDX", Type: "tool.called", Time: time.Date(2026, 12, 2, 9, 0, 0, 123456789, time.UTC),
		Study: "s1", Run: "r-7", Attempt: 2, Seq: 41, Source: Source{Kind: "harness", ID: "w1"}, Payload: []byte(`{"call_id":"c","tool":"t","args":{"a":[1,"}"]}}`)}
	traced := base
	traced.TraceID, traced.SpanID, traced.Ignorable = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", true
	for _, w := range []Envelope{base, traced} {
		b, ok := Append(nil, &w)
		if !ok {
			t.Fatalf("Append(%+v) not ok", w)
		}
		got, ok := scanInOrder(b, nil, nil)
		if !ok {
			t.Fatalf("scanInOrder(%s) not ok", b)
		}
		if !reflect.DeepEqual(got, w) || !got.Time.Equal(w.Time) {
			t.Errorf("scanInOrder(%s) =\n%+v\nwant\n%+v", b, got, w)
		}
		// The general reading, on the same bytes with the members moved: the same envelope.
		swapped := []byte(`{"id":"` + w.ID + `",` + string(b[len(`{"schema":3,"id":"`+w.ID+`",`):len(b)-1]) + `,"schema":3}`)
		if _, ok := scanInOrder(swapped, nil, nil); ok {
			t.Errorf("scanInOrder(%s) ok, out of order", swapped)
		}
		got, ok = Scan(swapped, nil, nil)
		if !ok || !reflect.DeepEqual(got, w) {
			t.Errorf("Scan(%s) = %+v, %v, want %+v", swapped, got, ok, w)
		}
	}
}
