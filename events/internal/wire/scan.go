package wire

import "github.com/dittolab/ditto/events/internal/jsonscan"

// Scan reads an encoded envelope, or returns ok false for anything it does not read exactly
// as a json.Decoder would (the caller then decodes b with one). Its payload aliases b, and is
// only bounded, not read (jsonscan.SkipBounds): ok true holds for the envelope on the
// condition that the caller reads the payload as one JSON value (with a jsonscan.Scanner),
// and is void if that fails. The payload is so read once, by whatever decodes it.
//
// It also returns ok false for an envelope string with escapes or bytes that are not UTF-8
// (json.Decoder reads those; they are rare): with ok true, nothing outside the payload is
// what jsonscan.Check refuses (its keys are known, distinct and plain, its strings plain), so
// that a caller checking the text need only check the payload (jsonscan.CheckNested at
// depth 1).
//
// The type and the source's kind are taken from known when it holds them (a key and its
// value, equal), so that the usual ones are not allocated anew for every event; the study,
// run and source id from strs (nil: allocated).
func Scan(b []byte, known map[string]string, strs *jsonscan.Strings) (w Envelope, ok bool) {
	s := jsonscan.New(b)
	s.Share(strs)
	var seen uint64
	s.BeginObject()
	for n, key := 0, []byte(nil); ; {
		if key = s.NextKey(&n); key == nil {
			break
		}
		switch string(key) {
		case "schema":
			s.Once(&seen, 0)
			w.Schema = s.Int()
		case "id":
			s.Once(&seen, 1)
			w.ID = s.PlainStr()
		case "type":
			s.Once(&seen, 2)
			w.Type = s.PlainStrOf(known)
		case "time":
			s.Once(&seen, 3)
			// encoding/json hands the literal to time.Time.UnmarshalJSON; so does this.
			if lit, clean := s.StrLit(); !clean || w.Time.UnmarshalJSON(lit) != nil {
				s.Fail()
			}
		case "study":
			s.Once(&seen, 4)
			w.Study = s.SharedStr()
		case "run":
			s.Once(&seen, 5)
			w.Run = s.SharedStr()
		case "attempt":
			s.Once(&seen, 6)
			w.Attempt = s.Int()
		case "seq":
			s.Once(&seen, 7)
			w.Seq = s.Int64()
		case "source":
			s.Once(&seen, 8)
			w.Source = scanSource(&s, known)
		case "trace_id":
			s.Once(&seen, 9)
			w.TraceID = s.PlainStr()
		case "span_id":
			s.Once(&seen, 10)
			w.SpanID = s.PlainStr()
		case "ignorable":
			s.Once(&seen, 11)
			w.Ignorable = s.Bool()
		case "payload":
			s.Once(&seen, 12)
			w.Payload = s.SkipBounds()
		default:
			s.Fail()
		}
	}
	// Anything but white space after the object is for json.Decoder to judge (it accepts some).
	s.End()
	return w, !s.Failed()
}

func scanSource(s *jsonscan.Scanner, known map[string]string) (src Source) {
	var seen uint64
	s.BeginObject()
	for n, key := 0, []byte(nil); ; {
		if key = s.NextKey(&n); key == nil {
			break
		}
		switch string(key) {
		case "kind":
			s.Once(&seen, 0)
			src.Kind = s.PlainStrOf(known)
		case "id":
			s.Once(&seen, 1)
			src.ID = s.SharedStr()
		default:
			s.Fail()
		}
	}
	return src
}
