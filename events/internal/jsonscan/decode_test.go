package jsonscan

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"
)

type inner struct {
	A string `json:"a"`
	N int    `json:"n,omitempty"`
}

type label string

// every has a field of every kind Decode reads.
type every struct {
	S      string              `json:"s"`
	L      label               `json:"l"`
	B      bool                `json:"b"`
	I      int                 `json:"i"`
	I64    int64               `json:"i64"`
	F      float64             `json:"f"`
	PI     *int64              `json:"pi,omitempty"`
	PF     *float64            `json:"pf"`
	PS     *string             `json:"ps"`
	PB     *bool               `json:"pb"`
	SS     []string            `json:"ss"`
	LS     []label             `json:"ls"`
	Raw    json.RawMessage     `json:"raw"`
	In     inner               `json:"in"`
	Ins    []inner             `json:"ins"`
	G      map[string][]string `json:"g"`
	NoTag  string
	Skip   string `json:"-"`
	hidden string
}

// checkSame fails unless Decode either declines data or agrees with json.Unmarshal on it.
func checkSame[T any](t *testing.T, data []byte) (ok bool) {
	t.Helper()
	got, ok := Decode[T](data)
	var want T
	err := json.Unmarshal(data, &want)
	if !ok {
		return false
	}
	if err != nil {
		t.Fatalf("Decode[%T](%q) accepted what json.Unmarshal refuses: %v", want, data, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Decode[%T](%q) =\n%#v\nwant\n%#v", want, data, got, want)
	}
	return true
}

func TestDecodeMatchesEncodingJSON(t *testing.T) {
	tests := []struct {
		name   string
		give   string
		wantOK bool
	}{
		{"every kind", `{"s":"x","l":"y","b":true,"i":-3,"i64":9007199254740993,"f":1.5e-3,"pi":7,"pf":-0.0,"ps":"p","pb":false,` +
			`"ss":["a","b"],"ls":[],"raw":{"k" : [1, "v"]},"in":{"a":"z","n":2},"ins":[{"a":"1"},{"n":3}],"g":{"A":["B"],"B":[]},"NoTag":"t"}`, true},
		{"empty object", `{}`, true},
		{"white space", " {\n\t\"s\" : \"x\" ,\r\"b\":true } ", true},
		{"empty arrays are not nil", `{"ss":[],"ins":[]}`, true},
		{"nulls", `{"s":null,"b":null,"i":null,"f":null,"pi":null,"pf":null,"ss":null,"raw":null,"in":null,"ins":null,"g":null}`, true},
		{"null graph successors, repeated state", `{"g":{"A":null,"A":["B"],"C":null}}`, true},
		{"escaped string value", `{"s":"a\u00e9\n\"b"}`, true},
		{"escaped map key", `{"g":{"\u0041":["B"]}}`, true},
		{"non-ASCII string value", `{"s":"é"}`, true},
		{"repeated key", `{"s":"a","s":"b"}`, false},
		{"repeated nested object", `{"in":{"a":"x"},"in":{"n":1}}`, false},
		{"key of no field", `{"zzz":1}`, false},
		{"key in another case", `{"S":"x"}`, false},
		{"escaped key", `{"\u0073":"x"}`, false},
		{"skipped field's key", `{"Skip":"x"}`, false},
		{"float in an int", `{"i":1.0}`, false},
		{"exponent in an int", `{"i":1e2}`, false},
		{"19 digits", `{"i64":1234567890123456789}`, false},
		{"overflowing float", `{"f":1e400}`, false},
		{"string for a number", `{"i":"1"}`, false},
		{"number for a string", `{"s":1}`, false},
		{"null string element", `{"ss":["a",null]}`, false},
		{"invalid UTF-8, replaced as encoding/json does", "{\"s\":\"\xff\"}", true},
		{"trailing data", `{"s":"x"} {}`, false},
		{"not an object", `["s"]`, false},
		{"truncated", `{"s":"x"`, false},
		{"trailing comma", `{"s":"x",}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if ok := checkSame[every](t, []byte(tt.give)); ok != tt.wantOK {
				t.Errorf("Decode[every](%q) ok = %v, want %v", tt.give, ok, tt.wantOK)
			}
		})
	}
}

// Types with a member Decode cannot read as encoding/json does get no plan: Decode always
// declines them, and the caller uses encoding/json.
func TestDecodeDeclinesTypesWithoutAPlan(t *testing.T) {
	type withTime struct {
		T time.Time `json:"t"`
	}
	type withEmbedded struct {
		inner
		S string `json:"s"`
	}
	type withStringOption struct {
		I int `json:"i,string"`
	}
	type withInterface struct {
		V any `json:"v"`
	}
	type withBytes struct {
		B []byte `json:"b"`
	}
	type withInt32 struct {
		I int32 `json:"i"`
	}
	type withOddName struct {
		A string `json:"a b"`
	}
	tests := []struct {
		name string
		ok   func() bool
	}{
		{"time.Time", func() bool { _, ok := Decode[withTime]([]byte(`{}`)); return ok }},
		{"embedded struct", func() bool { _, ok := Decode[withEmbedded]([]byte(`{}`)); return ok }},
		{",string option", func() bool { _, ok := Decode[withStringOption]([]byte(`{}`)); return ok }},
		{"interface", func() bool { _, ok := Decode[withInterface]([]byte(`{}`)); return ok }},
		{"[]byte", func() bool { _, ok := Decode[withBytes]([]byte(`{}`)); return ok }},
		{"int32", func() bool { _, ok := Decode[withInt32]([]byte(`{}`)); return ok }},
		{"name with a space", func() bool { _, ok := Decode[withOddName]([]byte(`{}`)); return ok }},
		{"not a struct", func() bool { _, ok := Decode[map[string]int]([]byte(`{}`)); return ok }},
	}
	for _, tt := range tests {
		if tt.ok() {
			t.Errorf("Decode of a type with %s: ok = true, want false", tt.name)
		}
	}
}

// FuzzDecode: whatever the input, Decode either declines it or agrees with json.Unmarshal.
// Run: go test -run '^$' -fuzz FuzzDecode -fuzztime 100000x ./events/internal/jsonscan
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"s":"x","b":true,"i":-3,"i64":12,"f":0.5,"pi":1,"pf":2,"ps":"p","pb":true,"ss":["a"],"ls":["b"],"raw":[1],"in":{"a":"z"},"ins":[{"n":1}],"g":{"A":["B"]},"NoTag":"t"}`,
		`{"pi":null,"ss":null,"g":{"A":null}}`, `{}`, ` {"s" : "\u00e9"} `, `{"i":1.5}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkSame[every](t, data)
	})
}

func ExampleDecode() {
	type step struct {
		State string `json:"state"`
		Tool  string `json:"tool"`
	}
	v, ok := Decode[step]([]byte(`{"state":"fetch","tool":"fetch_invoice"}`))
	fmt.Println(v, ok)
	_, ok = Decode[step]([]byte(`{"State":"fetch"}`)) // encoding/json would match the key case-insensitively
	fmt.Println(ok)
	// Output:
	// {fetch fetch_invoice} true
	// false
}

// DecodeChecked reports a value clean only when Check finds nothing in it, and finds the
// usual values clean.
func TestDecodeChecked(t *testing.T) {
	tests := []struct {
		give      string
		wantClean bool
	}{
		{`{"s":"a","ss":["b"],"raw":{"x":[1,"y"]},"in":{"a":"c"},"ins":[{"a":"d"}],"g":{"k":["v"],"l":null}}`, true},
		{`{"s":"a\n"}`, false},
		{`{"s":"\ud800"}`, false},
		{"{\"s\":\"\xff\"}", false},
		{`{"ss":["a","\u0062"]}`, false},
		{`{"ps":"\"q\""}`, false},
		{`{"raw":{"x":1,"x":2}}`, false},
		{`{"raw":["\ud800"]}`, false},
		{`{"in":{"a":"\t"}}`, false},
		{`{"ins":[{"a":"x"},{"a":"\/"}]}`, false},
		{`{"g":{"k":["v"],"k":[]}}`, false},
		{`{"g":{"k":["v"],"\u006b":[]}}`, false},
		{`{"g":{"k":["\u0076"]}}`, false},
	}
	for _, tt := range tests {
		_, ok, clean := DecodeChecked[every]([]byte(tt.give), nil)
		if !ok || clean != tt.wantClean {
			t.Errorf("DecodeChecked(%s) = ok %v, clean %v; want ok, clean %v", tt.give, ok, clean, tt.wantClean)
		}
		if clean && Check([]byte(tt.give)) != nil {
			t.Errorf("DecodeChecked(%s) clean, Check = %v", tt.give, Check([]byte(tt.give)))
		}
	}
}
