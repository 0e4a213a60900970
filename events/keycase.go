package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// checkKeyCase refuses a payload of type t with a key that encoding/json reads as one of the
// type's fields without being that field's name: it matches keys to names as bytes.EqualFold
// does ("Attempt", "ATTEMPT" and "attempt" are one field to it), while a store that keeps the
// payload's bytes reads only the exact name (DuckDB's '$.attempt'). The two would then read
// different values, or the store one that was never validated: {"attempt":2147483648,
// "Attempt":1} validated as attempt 1. Keys that name no field are left alone (neither reader
// takes them for a field). It walks raw only as deep as t has structs; path names raw's place
// in the event ("payload"). raw has been read by encoding/json into a t already.
func checkKeyCase(raw []byte, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		var members map[string]json.RawMessage
		if json.Unmarshal(raw, &members) != nil {
			return nil // null, or not an object: encoding/json read no field from it
		}
		fields := jsonFields(t)
		names := slices.Sorted(maps.Keys(fields))
		for _, key := range slices.Sorted(maps.Keys(members)) {
			if f, ok := fields[key]; ok {
				if err := checkKeyCase(members[key], f, path+"."+key); err != nil {
					return err
				}
				continue
			}
			for _, name := range names {
				if bytes.EqualFold([]byte(key), []byte(name)) {
					return &FieldError{Field: path + "." + name, Err: ErrKeyCase, Msg: fmt.Sprintf(
						"key %q is read as the field %q by encoding/json, which ignores case, and as another key by a reader of the stored bytes: spell it %q",
						key, name, name)}
				}
			}
		}
	case reflect.Slice, reflect.Array:
		var elems []json.RawMessage
		if json.Unmarshal(raw, &elems) != nil {
			return nil
		}
		for i, e := range elems {
			if err := checkKeyCase(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// jsonFields returns the JSON names of struct type t's fields, as encoding/json names them
// (the tag's name, else the field's; "-" left out; an untagged embedded struct's fields
// promoted), with each field's type.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := sf.Type
		if sf.Anonymous && name == "" {
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for n, typ := range jsonFields(ft) {
					if _, ok := out[n]; !ok {
						out[n] = typ
					}
				}
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		out[name] = ft
	}
	return out
}
