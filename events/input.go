package events

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// InputKeyPrefix starts every input key InputKeyOf derives, so that a derived key is never
// taken for one a client set.
const InputKeyPrefix = "sha256:"

// InputKeyOf derives the input key of a run from its input: InputKeyPrefix and the lowercase
// hex SHA-256 of the input's canonical JSON (RFC 8785), so that equal inputs written
// differently ({"b":1,"a":2} and {"a":2,"b":1}) have the same key. Errors wrap
// ErrNotCanonical.
func InputKeyOf(input json.RawMessage) (string, error) {
	c, err := Canonical(input)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c)
	return InputKeyPrefix + hex.EncodeToString(sum[:]), nil
}

// ResolvedInputKey is the input key of a run: the client's (InputKey), else the one derived
// from its Input, else "" (unknown: the run forms an input group of its own).
func (p RunStarted) ResolvedInputKey() string {
	if p.InputKey != "" {
		return p.InputKey
	}
	if len(p.Input) == 0 {
		return ""
	}
	k, err := InputKeyOf(p.Input)
	if err != nil { // Validate refuses such an input; a run that carries one has no key
		return ""
	}
	return k
}
