// Package jsonend checks that a JSON decoder has read its whole input. encoding/json's Decoder
// stops after one value and leaves the rest unread, so "{…} junk" decodes as "{…}" unless the
// caller looks; and Decoder.More is not that look: it answers false before a ']' or '}' (it
// asks whether an array or object goes on), so "{…}]" passes it. It imports the standard
// library only.
package jsonend

import (
	"encoding/json"
	"errors"
	"io"
)

// ErrTrailing is Check's error when something other than white space follows the value.
var ErrTrailing = errors.New("trailing data after the JSON value")

// Check returns nil when only white space follows the value dec decoded last, ErrTrailing when
// anything else does, and the reader's own error when reading the rest fails (a body over its
// size limit, say).
func Check(dec *json.Decoder) error {
	_, err := dec.Token()
	var syntax *json.SyntaxError
	switch {
	case err == io.EOF:
		return nil
	case err == nil, errors.As(err, &syntax):
		return ErrTrailing
	}
	return err
}

// Decode decodes the next JSON value from dec into v and then checks, as Check does, that
// nothing but white space follows it.
func Decode(dec *json.Decoder, v any) error {
	if err := dec.Decode(v); err != nil {
		return err
	}
	return Check(dec)
}
