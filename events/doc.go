// Package events is ditto's public event schema: the envelope, the typed payload of every event
// type, the NATS subjects they travel on, the versioned JSON codec, canonical JSON (RFC 8785) and
// the run fold that checks a run's history is well-formed.
//
// Events are past-tense facts about one agent run (or, for study.defined, one study). They are
// JSON on the wire so that any NATS client can read them. Production agents import this package
// (or events/client, which records and sends a run's events over HTTP) to publish their own
// traces; it depends on the standard library only.
//
// Versions are added, never mutated: Decode switches on (type, version) and keeps the branches of
// old versions, so an event written by any earlier ditto stays decodable.
//
// Encode, Decode and Canonical read and write JSON by hand, in one pass, below this package
// (events/internal/wire, jsonscan and jcs), and fall back to encoding/json for anything those
// do not handle exactly as encoding/json would; this package's reference tests and fuzz
// targets (FuzzDecodeFast, FuzzEncodeFast, FuzzCanonical) hold the two paths equal.
package events
