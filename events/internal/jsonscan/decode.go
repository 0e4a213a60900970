package jsonscan

import (
	"reflect"
	"unsafe"
)

// Decode reads raw, one JSON object with only white space around it, into a T as
// json.Unmarshal would, or returns ok false, and then the caller reads raw with
// json.Unmarshal. T's plan is compiled with reflection on first use; reading follows it
// without reflection. ok is false for every T that has no plan (see compile) and for input the
// Scanner does not read exactly as encoding/json would.
func Decode[T any](raw []byte) (v T, ok bool) { return DecodeShared[T](raw, nil) }

// DecodeShared is Decode whose strings come from strs where it holds them (see Strings).
func DecodeShared[T any](raw []byte, strs *Strings) (v T, ok bool) {
	v, ok, _ = DecodeChecked[T](raw, strs)
	return v, ok
}

// DecodeChecked is DecodeShared that also reports whether raw is clean: every string and key
// it holds is plain (no escapes, valid UTF-8), no object repeats a key, and its raw values are
// clean as SkipClean has it. Read with ok and clean true, raw holds nothing Check refuses, at
// the depth of an event's payload; clean false says nothing (Check decides).
func DecodeChecked[T any](raw []byte, strs *Strings) (v T, ok, clean bool) {
	p := planFor(reflect.TypeFor[T]())
	if p == nil {
		return v, false, false
	}
	s := Scanner{b: raw, strs: strs}
	// Keys are read by NextKey (plain ASCII or a failure) and each field once (Once), so only
	// the values can make raw unclean: Str, Raw and stringMap say so.
	s.object(unsafe.Pointer(&v), p, 0)
	s.End()
	if s.failed {
		var zero T
		return zero, false, false
	}
	return v, true, !s.unclean
}

// Writing through unsafe.Pointer: every pointer below is the address of a field of the T that
// Decode holds (or of an element of a slice it made), at the offset reflection reported for
// a field of exactly the kind written. A plan exists only for the kinds handled here, so each
// write has the layout of the field it writes.

// object reads a JSON object into the struct at base.
func (s *Scanner) object(base unsafe.Pointer, p *plan, depth int) {
	if depth > maxDepth {
		s.Fail()
		return
	}
	var seen uint64
	s.BeginObject()
	for n := 0; ; {
		key := s.NextKey(&n)
		if key == nil {
			return
		}
		f := p.lookup(key)
		if f == nil {
			s.Fail()
			return
		}
		s.Once(&seen, f.bit)
		s.field(unsafe.Add(base, f.off), f, depth)
	}
}

// field reads one member's value into ptr. A null is what encoding/json makes of it: nil for
// pointers, slices and maps, the bytes "null" for a json.RawMessage, no change otherwise.
func (s *Scanner) field(ptr unsafe.Pointer, f *field, depth int) {
	if s.Peek() == 'n' && f.kind != kRaw {
		s.Literal("null")
		switch f.kind {
		case kPointer:
			*(*unsafe.Pointer)(ptr) = nil
		case kStrings, kStructs:
			*(*sliceHeader)(ptr) = sliceHeader{}
		case kStringMap:
			*(*map[string][]string)(ptr) = nil
		}
		return
	}
	switch f.kind {
	case kPointer:
		v := reflect.New(f.typ).UnsafePointer()
		s.scalar(v, f.elem)
		*(*unsafe.Pointer)(ptr) = v
	case kStrings:
		*(*[]string)(ptr) = s.Strs()
	case kRaw:
		*(*[]byte)(ptr) = s.Raw()
	case kStruct:
		s.object(ptr, f.plan, depth+1)
	case kStructs:
		s.structs(ptr, f, depth)
	case kStringMap:
		*(*map[string][]string)(ptr) = s.stringMap()
	default:
		s.scalar(ptr, f.kind)
	}
}

// sliceHeader is the layout of a slice value.
type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

func (s *Scanner) scalar(ptr unsafe.Pointer, k kind) {
	switch k {
	case kString:
		*(*string)(ptr) = s.Str()
	case kBool:
		*(*bool)(ptr) = s.Bool()
	case kInt:
		*(*int)(ptr) = s.Int()
	case kInt64:
		*(*int64)(ptr) = s.Int64()
	case kFloat64:
		*(*float64)(ptr) = s.Float64()
	default:
		s.Fail()
	}
}

// structs reads an array of objects into the slice at ptr; [] is an empty, non-nil slice, as
// encoding/json makes it.
func (s *Scanner) structs(ptr unsafe.Pointer, f *field, depth int) {
	v := reflect.MakeSlice(f.typ, 0, 0)
	s.BeginArray()
	for n := 0; s.NextElem(&n); {
		v = reflect.Append(v, reflect.Zero(f.typ.Elem()))
		s.object(v.Index(v.Len()-1).Addr().UnsafePointer(), f.plan, depth+1)
	}
	if s.failed {
		return
	}
	*(*sliceHeader)(ptr) = sliceHeader{data: v.UnsafePointer(), len: v.Len(), cap: v.Cap()}
}

// stringMap reads an object of string arrays. As with encoding/json, a repeated key replaces
// the earlier one and a null array is a nil slice.
func (s *Scanner) stringMap() map[string][]string {
	g := map[string][]string{}
	s.BeginObject()
	for n := 0; ; n++ {
		c := s.Peek()
		if c == '}' {
			s.i++
			return g
		}
		if n > 0 {
			if c != ',' {
				s.Fail()
				return nil
			}
			s.i++
		}
		k := s.Str()
		if _, dup := g[k]; dup {
			s.unclean = true // a repeated key: Check refuses it
		}
		s.Expect(':')
		if s.Peek() == 'n' {
			s.Literal("null")
			g[k] = nil
		} else {
			g[k] = s.Strs()
		}
		if s.failed {
			return nil
		}
	}
}
