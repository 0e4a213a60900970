package events

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"testing"
)

// The vectors of RFC 8785: §3.2.2 (the sample), §3.2.3 (sorting) and Appendix B (numbers).
func TestCanonicalRFC8785(t *testing.T) {
	tests := []struct {
		name, give, want string
	}{
		{
			name: "rfc 3.2.2 sample",
			give: `{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`,
			want: `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`,
		},
		{
			name: "rfc 3.2.3 sorting by UTF-16 code units",
			give: `{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}`,
			want: "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"ö\":\"Latin Small Letter O With Diaeresis\",\"€\":\"Euro Sign\",\"😀\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}",
		},
		{name: "nested", give: ` { "b" : [ 1 , { "d":-0, "c": 1.0 } ], "a" : "x" } `, want: `{"a":"x","b":[1,{"c":1,"d":0}]}`},
		{name: "html not escaped", give: `"<a&b>"`, want: `"<a&b>"`},
		{name: "control chars", give: `"\u0001\b\t\f\u001f"`, want: `"\u0001\b\t\f\u001f"`},
		{name: "empty containers", give: `[{},[]]`, want: `[{},[]]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Canonical([]byte(tt.give))
			if err != nil {
				t.Fatalf("Canonical(%q) error %v", tt.give, err)
			}
			if string(got) != tt.want {
				t.Errorf("Canonical(%q) = %s, want %s", tt.give, got, tt.want)
			}
		})
	}
}

func TestFormatNumberAppendixB(t *testing.T) {
	tests := []struct {
		bits uint64
		want string
	}{
		{0x0000000000000000, "0"},
		{0x8000000000000000, "0"},
		{0x0000000000000001, "5e-324"},
		{0x8000000000000001, "-5e-324"},
		{0x7fefffffffffffff, "1.7976931348623157e+308"},
		{0xffefffffffffffff, "-1.7976931348623157e+308"},
		{0x4340000000000000, "9007199254740992"},
		{0xc340000000000000, "-9007199254740992"},
		{0x4430000000000000, "295147905179352830000"},
		{0x44b52d02c7e14af5, "9.999999999999997e+22"},
		{0x44b52d02c7e14af6, "1e+23"},
		{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
		{0x444b1ae4d6e2ef4e, "999999999999999700000"},
		{0x444b1ae4d6e2ef4f, "999999999999999900000"},
		{0x444b1ae4d6e2ef50, "1e+21"},
		{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
		{0x3eb0c6f7a0b5ed8d, "0.000001"},
		{0x41b3de4355555553, "333333333.3333332"},
		{0x41b3de4355555554, "333333333.33333325"},
		{0x41b3de4355555555, "333333333.3333333"},
		{0x41b3de4355555556, "333333333.3333334"},
		{0x41b3de4355555557, "333333333.33333343"},
		{0xbecbf647612f3696, "-0.0000033333333333333333"},
		{0x43143ff3c1cb0959, "1424953923781206.2"},
	}
	for _, tt := range tests {
		f := math.Float64frombits(tt.bits)
		if got := FormatNumber(f); got != tt.want {
			t.Errorf("FormatNumber(%#016x) = %s, want %s", tt.bits, got, tt.want)
		}
		// The same value written as a JSON literal canonicalizes to the same text.
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], tt.bits)
		if got, err := Canonical([]byte(tt.want)); err != nil || string(got) != tt.want {
			t.Errorf("Canonical(%s) = %s, %v", tt.want, got, err)
		}
	}
}

func TestCanonicalErrors(t *testing.T) {
	tests := []struct{ name, give string }{
		{"duplicate key", `{"a":1,"a":2}`},
		{"overflow", `1e400`},
		{"trailing", `{} {}`},
		{"malformed", `{"a":}`},
		{"invalid utf8", "\"\xff\""},
		{"empty", ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Canonical([]byte(tt.give)); !errors.Is(err, ErrNotCanonical) {
				t.Errorf("Canonical(%q) error = %v, want ErrNotCanonical", tt.give, err)
			}
		})
	}
}

func TestCanonicalIdempotent(t *testing.T) {
	in := `{"z":[1.50,"é",{"y":null}],"a":{"c":true,"b":1e2}}`
	once, err := Canonical([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	twice, err := Canonical(once)
	if err != nil || string(once) != string(twice) {
		t.Errorf("Canonical(Canonical(x)) = %s, %v; want %s", twice, err, once)
	}
}

// TestCanonicalFastPaths: the plan's and the calls' canonical JSON written directly equal
// CanonicalValue's of the same values, escapes, non-ASCII text, invalid UTF-8 and empty
// lists included.
func TestCanonicalFastPaths(t *testing.T) {
	texts := []string{"", "plain", `q"uote\back`, "tab\tnl\n\x01", "<&>", "é ☃ 𝄞", "\u2028", "bad\xffutf8"}
	var plans [][]PlanStep
	plans = append(plans, nil, []PlanStep{})
	for i, a := range texts {
		plans = append(plans, []PlanStep{{State: a, Tool: texts[(i+1)%len(texts)]}, {State: "s", Tool: a}})
	}
	for _, p := range plans {
		want, werr := CanonicalValue(p)
		got, gerr := canonicalPlan(p)
		if string(got) != string(want) || (werr == nil) != (gerr == nil) {
			t.Errorf("canonicalPlan(%q) = %s, %v; CanonicalValue = %s, %v", p, got, gerr, want, werr)
		}
	}
	argsList := []string{`{}`, `{"b":1,"a":[1,2.50,"x"]}`, ` { "z" : "<&>" , "y":null } `, `"s"`, `1e2`, `[true,false]`, `{"k":"é\u00e9"}`}
	var lists [][]Call
	lists = append(lists, nil, []Call{})
	for i, a := range argsList {
		lists = append(lists, []Call{{Tool: texts[i%len(texts)], Args: json.RawMessage(a)}, {Tool: "t", Args: json.RawMessage(argsList[(i+1)%len(argsList)])}})
	}
	for _, c := range lists {
		want := MustCanonical(c)
		if c == nil {
			want = MustCanonical([]Call{})
		}
		if got := CanonicalCalls(c); string(got) != string(want) {
			t.Errorf("CanonicalCalls(%v) = %s, want %s", c, got, want)
		}
	}
}
