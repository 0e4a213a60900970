package wire

import (
	"strconv"
	"time"
)

// Append appends w as encoding/json marshals it (HTML escaping off): the fields in declaration
// order, empty optional ones left out. It returns ok false for anything it does not write
// exactly as encoding/json would (a string needing an escape or holding non-ASCII bytes, a
// year outside 0..9999, an empty payload), and the caller then marshals w with encoding/json.
// w.Payload must be compact JSON, as a marshalled payload is: encoding/json would compact it,
// this copies it.
func Append(dst []byte, w *Envelope) ([]byte, bool) {
	if y := w.Time.Year(); y < 0 || y > 9999 || len(w.Payload) == 0 {
		return nil, false
	}
	ok := true
	str := func(s string) {
		for i := 0; i < len(s); i++ {
			if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
				ok = false
				return
			}
		}
		dst = append(dst, '"')
		dst = append(dst, s...)
		dst = append(dst, '"')
	}
	dst = append(dst, `{"schema":`...)
	dst = strconv.AppendInt(dst, int64(w.Schema), 10)
	dst = append(dst, `,"id":`...)
	str(w.ID)
	dst = append(dst, `,"type":`...)
	str(w.Type)
	dst = append(dst, `,"time":"`...)
	dst = w.Time.AppendFormat(dst, time.RFC3339Nano) // as Time.MarshalJSON, within years 0..9999
	dst = append(dst, `","study":`...)
	str(w.Study)
	dst = append(dst, `,"run":`...)
	str(w.Run)
	dst = append(dst, `,"attempt":`...)
	dst = strconv.AppendInt(dst, int64(w.Attempt), 10)
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendInt(dst, w.Seq, 10)
	dst = append(dst, `,"source":{"kind":`...)
	str(w.Source.Kind)
	dst = append(dst, `,"id":`...)
	str(w.Source.ID)
	dst = append(dst, '}')
	if w.TraceID != "" {
		dst = append(dst, `,"trace_id":`...)
		str(w.TraceID)
	}
	if w.SpanID != "" {
		dst = append(dst, `,"span_id":`...)
		str(w.SpanID)
	}
	if w.Ignorable {
		dst = append(dst, `,"ignorable":true`...)
	}
	dst = append(dst, `,"payload":`...)
	dst = append(dst, w.Payload...)
	dst = append(dst, '}')
	return dst, ok
}
