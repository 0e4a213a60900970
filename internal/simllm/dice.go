package simllm

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"math"
	mrand "math/rand/v2"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
)

// dice is the randomness of one request. Each decision draws from its own labelled sub-stream,
// so adding or reordering decisions in the code does not shift the others, and a decision's
// outcome depends only on (key, label).
type dice struct {
	key [32]byte
}

// diceDomain separates this version of the derivation from any later one.
const diceDomain = "ditto/simllm/dice/v1\x00"

// newDice derives the request's randomness from its seed and the canonical JSON of the parts of
// the request that shape the answer. Without a seed the key is random, as a real endpoint is
// nondeterministic without one.
func newDice(req *chatRequest) dice {
	var d dice
	if req.Seed == nil {
		if _, err := rand.Read(d.key[:]); err != nil {
			panic(err) // crypto/rand never fails on supported platforms
		}
		return d
	}
	h := sha256.New()
	h.Write([]byte(diceDomain))
	var s [8]byte
	binary.BigEndian.PutUint64(s[:], uint64(*req.Seed))
	h.Write(s[:])
	h.Write(requestFingerprint(req))
	copy(d.key[:], h.Sum(nil))
	return d
}

// requestFingerprint is the canonical JSON of model, messages, tools, tool_choice and
// response_format: embedded JSON values (tool schemas, tool_choice, the response schema, the
// tool-call arguments) are re-encoded with sorted keys, so whitespace and key order in the
// client's encoding do not matter.
func requestFingerprint(req *chatRequest) []byte {
	type msg struct {
		Role       string `json:"role"`
		Content    string `json:"content"`
		Name       string `json:"name"`
		ToolCalls  []any  `json:"tool_calls"`
		ToolCallID string `json:"tool_call_id"`
	}
	type tool struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      *bool           `json:"strict"`
	}
	v := struct {
		Model          string `json:"model"`
		Messages       []msg  `json:"messages"`
		Tools          []tool `json:"tools"`
		ToolChoice     any    `json:"tool_choice"`
		ResponseFormat any    `json:"response_format"`
	}{Model: req.Model, ToolChoice: canonicalAny(req.ToolChoice)}
	for _, m := range req.Messages {
		cm := msg{Role: m.Role, Content: string(m.Content), Name: m.Name, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			cm.ToolCalls = append(cm.ToolCalls, []any{tc.ID, tc.Type, tc.Function.Name, canonicalText(tc.Function.Arguments)})
		}
		v.Messages = append(v.Messages, cm)
	}
	for _, t := range req.Tools {
		ct := tool{Type: t.Type}
		if t.Function != nil {
			ct.Name, ct.Description, ct.Strict = t.Function.Name, t.Function.Description, t.Function.Strict
			if len(t.Function.Parameters) > 0 {
				ct.Parameters = canonicalJSON(t.Function.Parameters)
			}
		}
		v.Tools = append(v.Tools, ct)
	}
	if rf := req.ResponseFormat; rf != nil {
		m := map[string]any{"type": rf.Type}
		if js := rf.JSONSchema; js != nil {
			m["json_schema"] = map[string]any{
				"name": js.Name, "description": js.Description, "strict": js.Strict, "schema": json.RawMessage(canonicalJSON(js.Schema)),
			}
		}
		v.ResponseFormat = m
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only plain values above
	}
	return b
}

// canonicalCache memoises canonicalJSON for the large values that recur in every request of a
// run (tool schemas, response schemas). It is bounded: past canonicalCacheMax entries nothing
// more is stored.
var (
	canonicalCache      sync.Map // string(raw) → []byte
	canonicalCacheCount atomic.Int64
)

const (
	canonicalCacheMax     = 4096
	canonicalCacheMinSize = 256 // small values are cheaper to recompute than to look up
)

// canonicalJSON is raw re-encoded with sorted keys and no insignificant space (numbers keep
// their literal); invalid JSON is returned as a JSON string holding it.
func canonicalJSON(raw []byte) []byte {
	if len(raw) >= canonicalCacheMinSize {
		if b, ok := canonicalCache.Load(string(raw)); ok {
			return b.([]byte)
		}
	}
	b, _ := json.Marshal(canonicalAny(raw))
	if len(raw) >= canonicalCacheMinSize && canonicalCacheCount.Load() < canonicalCacheMax {
		if _, loaded := canonicalCache.LoadOrStore(string(raw), b); !loaded {
			canonicalCacheCount.Add(1)
		}
	}
	return b
}

// canonicalAny decodes raw JSON into plain values (maps marshal with sorted keys; numbers kept
// as their literal). Invalid JSON is kept as its bytes in a string so that it still counts.
func canonicalAny(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "invalid:" + string(raw)
	}
	return v
}

// canonicalText is canonicalAny for a string holding JSON (tool-call arguments).
func canonicalText(s string) any { return canonicalAny(json.RawMessage(s)) }

// sub returns the 32 bytes of the labelled sub-stream.
func (d dice) sub(label string) [32]byte {
	h := sha256.New()
	h.Write(d.key[:])
	h.Write([]byte(label))
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

// float returns a uniform value in [0,1) for label.
func (d dice) float(label string) float64 {
	s := d.sub(label)
	return float64(binary.BigEndian.Uint64(s[:8])>>11) / (1 << 53)
}

// chance reports whether the labelled event with probability p happens.
func (d dice) chance(label string, p float64) bool {
	return p > 0 && d.float(label) < p
}

// rng returns a generator for the labelled sub-stream, for decisions that need many draws.
func (d dice) rng(label string) *mrand.Rand {
	s := d.sub(label)
	return mrand.New(mrand.NewPCG(binary.BigEndian.Uint64(s[:8]), binary.BigEndian.Uint64(s[8:16])))
}

// normal returns a standard normal draw for label (Box–Muller over two sub-streams).
func (d dice) normal(label string) float64 {
	u1 := d.float(label + "/u1")
	u2 := d.float(label + "/u2")
	if u1 < 1e-300 {
		u1 = 1e-300
	}
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
}

// hex returns n hexadecimal characters of the labelled sub-stream, for response and call ids.
func (d dice) hex(label string, n int) string {
	s := d.sub(label)
	const digits = "0123456789abcdef"
	out := make([]byte, 0, n)
	for i := 0; len(out) < n && i < len(s); i++ {
		out = append(out, digits[s[i]>>4], digits[s[i]&15])
	}
	return string(out[:n])
}

// pick returns an index in [0,n) for label.
func (d dice) pick(label string, n int) int {
	if n <= 1 {
		return 0
	}
	return int(d.float(label) * float64(n))
}

// labelf joins label parts, e.g. labelf("step", 3) = "step/3".
func labelf(parts ...any) string {
	var b []byte
	for i, p := range parts {
		if i > 0 {
			b = append(b, '/')
		}
		switch v := p.(type) {
		case string:
			b = append(b, v...)
		case int:
			b = strconv.AppendInt(b, int64(v), 10)
		default:
			panic("labelf: unsupported part")
		}
	}
	return string(b)
}

// sortedKeys returns the keys of m in order; every map walk that affects output goes through it.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
