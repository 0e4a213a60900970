// Package jcs writes the RFC 8785 form (JSON Canonicalization Scheme) of a JSON value in one
// pass: the engine behind events.Canonical, which is on the path of every Encode and Decode.
//
// Its errors are unprefixed descriptions ("byte 12: invalid number"); the events package wraps
// them in events.ErrNotCanonical, the error its callers test for. It is tested through
// events.Canonical: the RFC 8785 vectors and FuzzCanonical, which compares it with a reference
// built on encoding/json's tokenizer.
package jcs
