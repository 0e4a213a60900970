package metrics

import (
	"crypto/sha256"
	"encoding/binary"
	"hash/maphash"
)

// Signature is the SHA-256 of a field's framed canonical bytes. Two runs
// have equal signatures iff the field's canonical bytes are equal (up to
// SHA-256 collisions).
type Signature [32]byte

// Framing: every string is written as its uvarint byte length followed by
// its bytes, every list as its uvarint element count followed by its
// elements, and every signature starts with a domain tag naming the field.
// So no two different field values share their framed bytes, and
// ("ab","c") never collides with ("a","bc").
const (
	tagPlan   = "ditto/sig/plan/v1\x00"
	tagStates = "ditto/sig/states/v1\x00"
	tagTools  = "ditto/sig/tools/v1\x00"
	tagCalls  = "ditto/sig/calls/v1\x00"
	tagOutput = "ditto/sig/output/v1\x00"
	tagTrace  = "ditto/sig/trace/v1\x00"
	tagArgs   = "ditto/sig/args/v1\x00"
)

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendStrings(b []byte, ss []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(ss)))
	for _, s := range ss {
		b = appendString(b, s)
	}
	return b
}

func appendCalls(b []byte, cs []Call) []byte {
	b = binary.AppendUvarint(b, uint64(len(cs)))
	for _, c := range cs {
		b = appendString(b, c.Tool)
		b = appendString(b, c.Args)
	}
	return b
}

func appendArgs(b []byte, cs []Call) []byte {
	b = binary.AppendUvarint(b, uint64(len(cs)))
	for _, c := range cs {
		b = appendString(b, c.Args)
	}
	return b
}

func sum(tag string, body []byte) Signature {
	h := sha256.New()
	h.Write([]byte(tag))
	h.Write(body)
	var s Signature
	h.Sum(s[:0])
	return s
}

// PlanSignature returns sig_plan.
func PlanSignature(r Run) Signature { return sum(tagPlan, appendString(nil, r.Plan)) }

// StatesSignature returns sig_states.
func StatesSignature(r Run) Signature { return sum(tagStates, appendStrings(nil, r.States)) }

// ToolsSignature returns sig_tools.
func ToolsSignature(r Run) Signature { return sum(tagTools, appendStrings(nil, r.Tools)) }

// CallsSignature returns sig_calls: the ordered (tool, args) pairs.
func CallsSignature(r Run) Signature { return sum(tagCalls, appendCalls(nil, r.Calls)) }

// OutputSignature returns sig_output.
func OutputSignature(r Run) Signature { return sum(tagOutput, appendString(nil, r.Output)) }

// TraceSignature returns sig_trace, the strict trace match: plan, states,
// calls and output framed together in that order.
func TraceSignature(r Run) Signature {
	b := appendString(nil, r.Plan)
	b = appendStrings(b, r.States)
	b = appendCalls(b, r.Calls)
	b = appendString(b, r.Output)
	return sum(tagTrace, b)
}

// RunSignatures are a run's six signatures, as the functions above give them one by one.
type RunSignatures struct {
	Plan, States, Tools, Calls, Output, Trace Signature
}

// Signatures returns r's six signatures at once: each field framed once into one buffer (the
// trace's framing is the plan's, the states', the calls' and the output's, one after another)
// and hashed with one digest, where the six functions frame and hash apart (the trace framing
// its fields a second time), each growing its own buffer. It is for a reader that stores all
// six for every run, as the analyzer's fold does.
func Signatures(r Run) RunSignatures {
	n := 5*binary.MaxVarintLen64 + len(r.Plan) + len(r.Output)
	for _, list := range [...][]string{r.States, r.Tools} {
		for _, s := range list {
			n += binary.MaxVarintLen64 + len(s)
		}
	}
	for _, c := range r.Calls {
		n += 2*binary.MaxVarintLen64 + len(c.Tool) + len(c.Args)
	}
	b := make([]byte, 0, n)
	b = appendString(b, r.Plan)
	plan := len(b)
	b = appendStrings(b, r.States)
	states := len(b)
	b = appendStrings(b, r.Tools)
	tools := len(b)
	b = appendCalls(b, r.Calls)
	calls := len(b)
	b = appendString(b, r.Output)

	h := sha256.New()
	var out RunSignatures
	sum := func(sig *Signature, tag string, parts ...[]byte) {
		h.Reset()
		h.Write([]byte(tag))
		for _, p := range parts {
			h.Write(p)
		}
		h.Sum(sig[:0])
	}
	sum(&out.Plan, tagPlan, b[:plan])
	sum(&out.States, tagStates, b[plan:states])
	sum(&out.Tools, tagTools, b[states:tools])
	sum(&out.Calls, tagCalls, b[tools:calls])
	sum(&out.Output, tagOutput, b[calls:])
	sum(&out.Trace, tagTrace, b[:states], b[tools:])
	return out
}

// key128 is the in-memory grouping key: two independent 64-bit maphashes of
// the same framed bytes. ComputeCell groups by these rather than by SHA-256
// because they are several times cheaper and only the equality partition
// matters (collision probability ~N²/2¹²⁹). Group numbering never depends on
// the hash values, so results are deterministic although the seeds are not.
type key128 struct{ a, b uint64 }

type hasher struct{ s1, s2 maphash.Seed }

func newHasher() hasher { return hasher{maphash.MakeSeed(), maphash.MakeSeed()} }

func (h hasher) key(b []byte) key128 {
	return key128{maphash.Bytes(h.s1, b), maphash.Bytes(h.s2, b)}
}
