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
	if w, ok := scanInOrder(b, known, strs); ok {
		return w, true
	}
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
			scanTime(&s, &w)
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

// scanInOrder is Scan for the usual envelope, written as Append writes one: its members in
// their declaration order, the optional ones left out or in their places, and the payload
// last. It matches each key, with the punctuation around it, as one literal instead of reading
// keys one by one, and bounds the payload by the envelope's closing brace instead of by its
// brackets (Scan's condition that the caller reads the payload as one value covers both: a
// payload that is not one value up to that brace is not one value). The values are read as
// Scan reads them, so what it returns is what Scan's member-by-member reading would; ok
// false says only that b is not laid out so, and Scan then reads it member by member.
func scanInOrder(b []byte, known map[string]string, strs *jsonscan.Strings) (w Envelope, ok bool) {
	end := len(b)
	for end > 0 && isSpace(b[end-1]) {
		end--
	}
	if end == 0 || b[end-1] != '}' {
		return w, false
	}
	s := jsonscan.New(b[:end-1]) // the envelope without its closing brace
	s.Share(strs)
	s.Expect('{')
	s.Literal(`"schema":`)
	w.Schema = s.Int()
	s.Literal(`,"id":`)
	w.ID = s.PlainStr()
	s.Literal(`,"type":`)
	w.Type = s.PlainStrOf(known)
	s.Literal(`,"time":`)
	scanTime(&s, &w)
	s.Literal(`,"study":`)
	w.Study = s.SharedStr()
	s.Literal(`,"run":`)
	w.Run = s.SharedStr()
	s.Literal(`,"attempt":`)
	w.Attempt = s.Int()
	s.Literal(`,"seq":`)
	w.Seq = s.Int64()
	s.Literal(`,"source":{"kind":`)
	w.Source.Kind = s.PlainStrOf(known)
	s.Literal(`,"id":`)
	w.Source.ID = s.SharedStr()
	s.Literal(`}`)
	if s.Next(`,"trace_id":`) {
		w.TraceID = s.PlainStr()
	}
	if s.Next(`,"span_id":`) {
		w.SpanID = s.PlainStr()
	}
	if s.Next(`,"ignorable":`) {
		w.Ignorable = s.Bool()
	}
	s.Literal(`,"payload":`)
	// Bare, as Scan's bounds are: white space around the value is the envelope's.
	w.Payload = s.Rest()
	if s.Failed() || len(w.Payload) == 0 || isSpace(w.Payload[0]) || isSpace(w.Payload[len(w.Payload)-1]) {
		return Envelope{}, false
	}
	return w, true
}

// scanTime reads the time member's value: encoding/json hands the literal to
// time.Time.UnmarshalJSON, and so does this, unless it is a time in UTC as producers write
// one (utcTime reads those to the same value).
func scanTime(s *jsonscan.Scanner, w *Envelope) {
	lit, clean := s.StrLit()
	if !clean {
		s.Fail()
		return
	}
	if t, ok := utcTime(lit); ok {
		w.Time = t
		return
	}
	if w.Time.UnmarshalJSON(lit) != nil {
		s.Fail()
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
