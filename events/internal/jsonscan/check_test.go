package jsonscan

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		name      string
		give      string
		wantFault Fault // 0: none
		wantPath  string
	}{
		{"plain", `{"a":"b","c":[1,"d",{"e":null}]}`, 0, ""},
		{"surrogate pair", `{"a":"\ud83d\ude00"}`, 0, ""},
		{"escapes of every kind", `{"a":"\"\\\/\b\f\n\r\t\u0000\u00e9"}`, 0, ""},
		{"the same key in sibling objects", `[{"a":1},{"a":2}]`, 0, ""},
		{"the same key at two depths", `{"a":{"a":1}}`, 0, ""},
		{"syntax error before a fault: left to the decoder", `{"a" 1,"b":"\ud800"}`, 0, ""},
		{"lone high surrogate", `{"a":"\ud800"}`, FaultSurrogate, "a"},
		{"lone low surrogate", `{"a":["x","\uDFFF"]}`, FaultSurrogate, "a[1]"},
		{"high then high", `{"a":"\ud800\ud800"}`, FaultSurrogate, "a"},
		{"high then a short escape", `{"a":"\ud800\n"}`, FaultSurrogate, "a"},
		{"invalid byte", "{\"a\":{\"b\":\"\xff\"}}", FaultUTF8, "a.b"},
		{"truncated sequence", "{\"a\":\"\xe2\x82\"}", FaultUTF8, "a"},
		{"overlong encoding", "{\"a\":\"\xc0\xaf\"}", FaultUTF8, "a"},
		{"invalid byte in a key", "{\"\xff\":1}", FaultUTF8, ""},
		{"duplicate key", `{"a":1,"b":2,"a":3}`, FaultDuplicateKey, "a"},
		{"duplicate escaped key", `{"x":{"ab":1,"a\u0062":2}}`, FaultDuplicateKey, "x.ab"},
		{"duplicate among many keys", manyKeys(40, "k7"), FaultDuplicateKey, "k07"},
		{"many distinct keys", manyKeys(40, ""), 0, ""},
		{"a key shown escaped", `{"a\u0001":{"b":"\ud800"}}`, FaultSurrogate, `a\x01.b`},
		{"too deep", strings.Repeat("[", maxDepth+2) + strings.Repeat("]", maxDepth+2), FaultDepth, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check([]byte(tt.give))
			switch {
			case tt.wantFault == 0 && err != nil:
				t.Fatalf("Check(%q) = %v, want nil", tt.give, err)
			case tt.wantFault == 0:
			case err == nil:
				t.Fatalf("Check(%q) = nil, want fault %d at %q", tt.give, tt.wantFault, tt.wantPath)
			case err.Fault != tt.wantFault:
				t.Fatalf("Check(%q) = %v, want fault %d", tt.give, err, tt.wantFault)
			case tt.wantFault != FaultDepth && err.Path != tt.wantPath:
				t.Fatalf("Check(%q) path = %q, want %q", tt.give, err.Path, tt.wantPath)
			}
		})
	}
}

// manyKeys is an object of n keys k0..k(n-1), then dup again if not empty.
func manyKeys(n int, dup string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"k` + string(rune('0'+i/10)) + string(rune('0'+i%10)) + `":1`)
	}
	if dup != "" {
		b.WriteString(`,"k0` + dup[1:] + `":2`)
	}
	b.WriteByte('}')
	return b.String()
}

// FuzzCheck: on any text encoding/json accepts, Check finds bytes that are not UTF-8 exactly
// when the text is not UTF-8 (outside strings non-ASCII bytes are syntax errors), and a
// repeated key exactly when encoding/json's own token reader meets one.
// Run: go test -run '^$' -fuzz FuzzCheck -fuzztime 100000x ./events/internal/jsonscan
func FuzzCheck(f *testing.F) {
	for _, s := range []string{
		`{"a":"b"}`, `{"a":1,"a":2}`, `{"a":"\ud800"}`, "{\"a\":\"\xff\"}", `{"a":{"b":[{"a":1,"b":2}]}}`,
		`{"a\u0062":1,"ab":2}`, `["\ud83d\ude00"]`, `"\udc00"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			Check(data) // must not panic
			return
		}
		err := Check(data)
		if err != nil && err.Fault == FaultDepth {
			return
		}
		gotUTF8 := err != nil && err.Fault == FaultUTF8
		if !utf8.Valid(data) && err == nil {
			t.Fatalf("Check(%q) = nil, but the text is not UTF-8", data)
		}
		if gotUTF8 && utf8.Valid(data) {
			t.Fatalf("Check(%q) = %v, but the text is UTF-8", data, err)
		}
		if err != nil && err.Fault == FaultDuplicateKey && !hasDuplicateKey(data) {
			t.Fatalf("Check(%q) = %v, but no key repeats", data, err)
		}
		if err == nil && hasDuplicateKey(data) {
			t.Fatalf("Check(%q) = nil, but a key repeats", data)
		}
		if err != nil && err.Fault == FaultSurrogate && !bytes.Contains(bytes.ToLower(data), []byte(`\ud`)) {
			t.Fatalf("Check(%q) = %v, but the text has no surrogate escape", data, err)
		}
	})
}

// hasDuplicateKey reads data with encoding/json's token reader and reports whether an object
// repeats a key (keys as encoding/json unescapes them).
func hasDuplicateKey(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		object  bool
		keys    map[string]bool
		wantKey bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err == io.EOF || err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.wantKey {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				if len(stack) > 0 && stack[len(stack)-1].object {
					stack[len(stack)-1].wantKey = true
				}
				continue
			}
			k := tok.(string)
			if top.keys[k] {
				return true
			}
			top.keys[k] = true
			top.wantKey = false
			continue
		}
		switch d, _ := tok.(json.Delim); d {
		case '{':
			stack = append(stack, &frame{object: true, keys: map[string]bool{}, wantKey: true})
			continue
		case '[':
			stack = append(stack, &frame{})
			continue
		case ']':
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].wantKey = true
		}
	}
}

// skipCleanSeeds are values at the edges of what SkipClean vouches for.
var skipCleanSeeds = []string{
	`{"a":"b","c":[1,"d",{"e":null}]}`,
	`{"a":1,"b":2,"a":3}`,
	`{"x":{"a":1,"b":{"c":[{"d":1,"d":2}]}}}`,
	`[{"a":1},{"a":2}]`,
	`{"a":{"a":1}}`,
	`{"ab":1,"a\u0062":2}`,
	`{"a":"\n"}`,
	`{"a":"\ud800"}`,
	"{\"a\":\"\xff\"}",
	"{\"\xc3\xa9\":1,\"\xc3\xa9\":2}",
	"{\"\xc3\xa9\":\"\xe2\x82\xac\"}",
	manyKeys(cleanKeys, ""),
	manyKeys(cleanKeys, "k3"),
	manyKeys(cleanKeys+1, ""),
	manyKeys(cleanKeys+1, "k16"),
	manyKeys(40, "k7"),
	strings.Repeat(`{"a":`, cleanDepth) + `1` + strings.Repeat(`}`, cleanDepth),
	strings.Repeat(`{"a":`, cleanDepth+1) + `1` + strings.Repeat(`}`, cleanDepth+1),
	strings.Repeat(`[`, cleanDepth+2) + `{"a":1,"a":2}` + strings.Repeat(`]`, cleanDepth+2),
	strings.Repeat("[", maxDepth+2) + strings.Repeat("]", maxDepth+2),
	`{"a" 1}`, `{"a":1,}`, `[1,]`, `{"a":tru}`, `"abc`, `-`, `{"a":[1 2]}`, ` {"a":1} `, `{"a":1}x`,
}

func TestSkipClean(t *testing.T) {
	for _, s := range skipCleanSeeds {
		checkSkipClean(t, []byte(s))
	}
	tests := []struct {
		give      string
		wantClean bool
	}{
		{`{"a":"b","c":[1,"d",{"e":null}]}`, true},
		{`{"a":1,"b":2,"a":3}`, false},
		{`{"x":{"a":1,"b":{"c":[{"d":1,"d":2}]}}}`, false},
		{`[{"a":1},{"a":2}]`, true},
		{`{"a":"\n"}`, false},
		{"{\"\xc3\xa9\":\"\xe2\x82\xac\"}", true},
		{"{\"a\":\"\xff\"}", false},
		{manyKeys(cleanKeys, ""), true},
		{manyKeys(cleanKeys+1, ""), false},
		{strings.Repeat(`{"a":`, cleanDepth) + `1` + strings.Repeat(`}`, cleanDepth), true},
		{strings.Repeat(`{"a":`, cleanDepth+2) + `1` + strings.Repeat(`}`, cleanDepth+2), false},
	}
	for _, tt := range tests {
		s := New([]byte(tt.give))
		if _, clean := s.SkipClean(); clean != tt.wantClean || s.Failed() {
			t.Errorf("SkipClean(%q) clean = %v (failed %v), want %v", tt.give, clean, s.Failed(), tt.wantClean)
		}
	}
}

// checkSkipClean fails unless SkipClean reads data as Skip does (the same bytes, the same
// failure, the same position) and a value it calls clean is one Check finds nothing in, at the
// payload's depth in an event.
func checkSkipClean(t *testing.T, data []byte) {
	t.Helper()
	a, b := New(data), New(data)
	want := a.Skip(0)
	got, clean := b.SkipClean()
	if a.Failed() != b.Failed() || a.i != b.i || !bytes.Equal(got, want) {
		t.Fatalf("SkipClean(%q) = %q (failed %v, at %d), Skip = %q (failed %v, at %d)", data, got, b.Failed(), b.i, want, a.Failed(), a.i)
	}
	if clean && b.Failed() {
		t.Fatalf("SkipClean(%q) failed and reports clean", data)
	}
	if clean {
		if err := CheckNested(got, 1); err != nil {
			t.Fatalf("SkipClean(%q) reports clean, CheckNested = %v", data, err)
		}
	}
}

// FuzzSkipClean: SkipClean reads every input as Skip does, and what it calls clean Check
// finds nothing in.
// Run: go test -run '^$' -fuzz FuzzSkipClean -fuzztime 100000x ./events/internal/jsonscan
func FuzzSkipClean(f *testing.F) {
	for _, s := range skipCleanSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkSkipClean)
}
