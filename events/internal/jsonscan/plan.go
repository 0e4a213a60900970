package jsonscan

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
)

// kind is how a field is read.
type kind uint8

const (
	kString    kind = iota + 1 // any type of kind string
	kBool                      // any type of kind bool
	kInt                       // any type of kind int
	kInt64                     // any type of kind int64
	kFloat64                   // any type of kind float64
	kPointer                   // a pointer to one of the five above
	kStrings                   // a slice of a type of kind string
	kRaw                       // json.RawMessage
	kStruct                    // a struct with a plan
	kStructs                   // a slice of a struct with a plan
	kStringMap                 // map[string][]string
)

// field is one JSON member of a struct.
type field struct {
	name string
	bit  uint    // the field's number, for Scanner.Once
	off  uintptr // offset in the struct
	kind kind
	elem kind         // kPointer: the kind pointed to
	typ  reflect.Type // kPointer: the type pointed to; kStructs: the slice type
	plan *plan        // kStruct, kStructs: the element's plan
}

// plan says how to read a struct type: its JSON members in declaration order.
type plan struct {
	fields []field
}

func (p *plan) lookup(key []byte) *field {
	for i := range p.fields {
		if p.fields[i].name == string(key) {
			return &p.fields[i]
		}
	}
	return nil
}

// plans caches the plan of every type asked for; a nil *plan marks a type Decode leaves to
// encoding/json.
var plans sync.Map // reflect.Type → *plan

func planFor(t reflect.Type) *plan {
	if p, ok := plans.Load(t); ok {
		return p.(*plan)
	}
	p := compile(t, 0)
	plans.Store(t, p)
	return p
}

var (
	rawMessageType      = reflect.TypeFor[json.RawMessage]()
	stringMapType       = reflect.TypeFor[map[string][]string]()
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// compile returns the plan of struct type t, or nil when t has a field that Decode could not
// read exactly as encoding/json does: a type with its own UnmarshalJSON or UnmarshalText, an
// embedded struct, a ",string" option, a kind it does not read (interfaces, arrays, []byte,
// sized integers, ...), more than 64 members, or two members of one name.
func compile(t reflect.Type, depth int) *plan {
	if t.Kind() != reflect.Struct || depth > 8 || hasOwnDecoding(t) {
		return nil
	}
	p := &plan{}
	names := map[string]bool{}
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() && !sf.Anonymous {
			continue // encoding/json ignores unexported fields
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if sf.Anonymous || strings.Contains(","+opts+",", ",string,") || !plainName(name) {
			return nil
		}
		if name == "" {
			name = sf.Name
		}
		if names[name] || len(p.fields) == 64 {
			return nil
		}
		names[name] = true
		f := field{name: name, bit: uint(len(p.fields)), off: sf.Offset}
		if !f.set(sf.Type, depth) {
			return nil
		}
		p.fields = append(p.fields, f)
	}
	return p
}

// set fills f.kind (and what the kind needs) for a field of type t; false if none fits.
func (f *field) set(t reflect.Type, depth int) bool {
	if t == rawMessageType {
		f.kind = kRaw
		return true
	}
	if t == stringMapType {
		f.kind = kStringMap
		return true
	}
	if hasOwnDecoding(t) {
		return false
	}
	if k := scalar(t); k != 0 {
		f.kind = k
		return true
	}
	switch t.Kind() {
	case reflect.Pointer:
		if k := scalar(t.Elem()); k != 0 && !hasOwnDecoding(t.Elem()) {
			f.kind, f.elem, f.typ = kPointer, k, t.Elem()
			return true
		}
	case reflect.Slice:
		e := t.Elem()
		if hasOwnDecoding(e) {
			return false
		}
		if e.Kind() == reflect.String {
			f.kind = kStrings
			return true
		}
		if p := compile(e, depth+1); p != nil {
			f.kind, f.typ, f.plan = kStructs, t, p
			return true
		}
	case reflect.Struct:
		if p := compile(t, depth+1); p != nil {
			f.kind, f.plan = kStruct, p
			return true
		}
	}
	return false
}

// scalar returns the kind of a string, bool, int, int64 or float64 type, or 0.
func scalar(t reflect.Type) kind {
	switch t.Kind() {
	case reflect.String:
		return kString
	case reflect.Bool:
		return kBool
	case reflect.Int:
		return kInt
	case reflect.Int64:
		return kInt64
	case reflect.Float64:
		return kFloat64
	}
	return 0
}

// hasOwnDecoding reports whether encoding/json would call a method of t (or *t) to decode it.
func hasOwnDecoding(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t.Implements(jsonUnmarshalerType) || p.Implements(jsonUnmarshalerType) ||
		t.Implements(textUnmarshalerType) || p.Implements(textUnmarshalerType)
}

// plainName reports whether a tag name is one encoding/json takes as it is and the scanner
// can match byte for byte: ASCII letters, digits, '_', '-' and '.'.
func plainName(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}
