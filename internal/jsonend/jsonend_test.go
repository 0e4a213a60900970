package jsonend

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		in   string
		want error
	}{
		{`{"a":1}`, nil},
		{"{\"a\":1} \n\t\r\n", nil},
		{`{"a":1}]`, ErrTrailing},
		{`{"a":1}}`, ErrTrailing},
		{`{"a":1} {}`, ErrTrailing},
		{`{"a":1}x`, ErrTrailing},
		{`{"a":1},`, ErrTrailing},
		{`{"a":1}"s"`, ErrTrailing},
		{`{"a":1} 1`, ErrTrailing},
	}
	for _, tt := range tests {
		dec := json.NewDecoder(strings.NewReader(tt.in))
		var v map[string]any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("Decode(%q) = %v", tt.in, err)
		}
		if got := Check(dec); !errors.Is(got, tt.want) {
			t.Errorf("Check after %q = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// A reader's own failure is its error, not trailing data.
func TestCheckPassesReadErrors(t *testing.T) {
	boom := errors.New("boom")
	dec := json.NewDecoder(&failAfter{data: `{"a":1} `, err: boom})
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	if got := Check(dec); !errors.Is(got, boom) {
		t.Errorf("Check = %v, want the reader's error", got)
	}
}

type failAfter struct {
	data string
	err  error
}

func (r *failAfter) Read(p []byte) (int, error) {
	if r.data == "" {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

// Decode is Decode then Check: the decoder's own error first, then trailing data.
func TestDecode(t *testing.T) {
	var v map[string]any
	if err := Decode(json.NewDecoder(strings.NewReader(`{"a":1} `)), &v); err != nil || v["a"] != 1.0 {
		t.Errorf("Decode of one object = %v, %v", err, v)
	}
	if err := Decode(json.NewDecoder(strings.NewReader(`{"a":1}]`)), &v); !errors.Is(err, ErrTrailing) {
		t.Errorf("Decode with trailing data = %v, want ErrTrailing", err)
	}
	var syntax *json.SyntaxError
	if err := Decode(json.NewDecoder(strings.NewReader(`{"a":}`)), &v); !errors.As(err, &syntax) {
		t.Errorf("Decode of bad JSON = %v, want the decoder's syntax error", err)
	}
}
