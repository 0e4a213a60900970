// Package jsonscan reads JSON into Go values for the events package's fast paths, at a
// fraction of encoding/json's cost, and only where the result is exactly encoding/json's.
//
// Scanner reads JSON token by token; Decode reads an object into a struct by following a plan
// compiled once per type from its fields and json tags. Whatever they cannot read exactly as
// encoding/json would (escaped or repeated keys, keys of no field, numbers out of a field's
// range, types with their own UnmarshalJSON, ...) makes them report failure, never a different
// value: the caller then reads the same bytes with encoding/json, which gives the result or the
// error it always gave. The events package's FuzzDecodeFast checks that the two paths agree.
package jsonscan
