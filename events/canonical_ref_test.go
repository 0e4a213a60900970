package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"unicode/utf16"

	"github.com/dittolab/ditto/events/internal/jcs"
)

// canonicalReference is a second, independent canonicalizer built on encoding/json's
// tokenizer: slow, obviously right, and the oracle for the fast single-pass parser.
func canonicalReference(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var buf bytes.Buffer
	if err := refValue(dec, &buf); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("trailing data")
	}
	return buf.Bytes(), nil
}

func refValue(dec *json.Decoder, buf *bytes.Buffer) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch v := tok.(type) {
	case json.Delim:
		if v == '[' {
			buf.WriteByte('[')
			for i := 0; dec.More(); i++ {
				if i > 0 {
					buf.WriteByte(',')
				}
				if err := refValue(dec, buf); err != nil {
					return err
				}
			}
			_, err := dec.Token()
			buf.WriteByte(']')
			return err
		}
		type kv struct {
			k string
			v []byte
		}
		var kvs []kv
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return err
			}
			var vb bytes.Buffer
			if err := refValue(dec, &vb); err != nil {
				return err
			}
			kvs = append(kvs, kv{kt.(string), vb.Bytes()})
		}
		if _, err := dec.Token(); err != nil {
			return err
		}
		slices.SortFunc(kvs, func(a, b kv) int {
			return slices.Compare(utf16.Encode([]rune(a.k)), utf16.Encode([]rune(b.k)))
		})
		buf.WriteByte('{')
		for i, m := range kvs {
			if i > 0 {
				if kvs[i-1].k == m.k {
					return fmt.Errorf("duplicate key")
				}
				buf.WriteByte(',')
			}
			buf.Write(jcs.AppendString(nil, m.k))
			buf.WriteByte(':')
			buf.Write(m.v)
		}
		buf.WriteByte('}')
	case string:
		buf.Write(jcs.AppendString(nil, v))
	case json.Number:
		var f float64
		if err := json.Unmarshal([]byte(v), &f); err != nil {
			return err
		}
		buf.WriteString(FormatNumber(f))
	case bool:
		fmt.Fprint(buf, v)
	case nil:
		buf.WriteString("null")
	}
	return nil
}

// FuzzCanonical checks the fast canonicalizer against the reference: same output whenever
// the reference accepts the input, and canonical output is a fixed point.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{
		`{"b":1,"a":[1.50,-0,1E30,"\u20ac\n"]}`, `[]`, `{}`, `"\ud83d\ude00"`, `123456789012345678`,
		`{"\u00f6":1,"\r":2,"1":3}`, `0.000001`, `1e-7`, `{"a":{"c":1,"b":2},"a2":[{"y":1,"x":2}]}`,
		`[1,2,3] `, ` {"x" : "y" } `, `"<&>"`, `{"a":1,"a":1}`, `-`, `01`, `1.`, `"\x"`,
		// At the edges of what IsCanonical's fast path accepts.
		`0.05`, `-0.5`, `123.45`, `1.50`, `-0`, `0.000001`, `0.0000001`, `12345678901234.5`,
		`123456789012345.6`, `1e5`, `100000000000000000000`, `[0.1,-7,{"a":"\u001f\n\"\\"}]`,
		`"\u000a"`, `"\u001F"`, `"\u0020"`, `"\/"`, `{"a":1,"b":2}`, `{"b":1,"a":2}`,
		`{"\u0061":1}`, `{"é":1,"z":2}`, `{"z":1,"é":2}`, `{"😀":1,"ﬁ":2}`, `[1,]`, `{"a":1,}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := Canonical(data)
		want, refErr := canonicalReference(data)
		// IsCanonical, which validation uses, says whether data is its own canonical form.
		if same, cerr := jcs.IsCanonical(data); (cerr == nil) != (err == nil) || same != (err == nil && bytes.Equal(got, data)) {
			t.Fatalf("IsCanonical(%q) = %v, %v; Canonical = %q, %v", data, same, cerr, got, err)
		}
		if err == nil {
			if again, err2 := Canonical(got); err2 != nil || !bytes.Equal(again, got) {
				t.Fatalf("Canonical not a fixed point on %q: %q, %v", data, again, err2)
			}
			if same, _ := jcs.IsCanonical(got); !same {
				t.Fatalf("IsCanonical(%q) = false for Canonical's output", got)
			}
		}
		if refErr != nil || err != nil {
			// The fast parser is stricter (lone surrogates, invalid UTF-8); it must never
			// accept what the reference rejects.
			if err == nil && refErr != nil {
				t.Fatalf("Canonical(%q) accepted %q; reference error %v", data, got, refErr)
			}
			return
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("Canonical(%q) = %q, reference %q", data, got, want)
		}
	})
}

func BenchmarkCanonical(b *testing.B) {
	in := []byte(`{"portfolio":"data/portfolios/portfolio-a","loans":[{"id":"L1","stage":2,"pd":0.035,"lgd":0.45,"ead":125000.5},{"id":"L2","stage":1,"pd":0.01,"lgd":0.4,"ead":80000}],"precision":2,"include_stage3":true}`)
	b.Run("check", func(b *testing.B) {
		canon, err := Canonical(in)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if err := checkCanonical("payload.args", canon, false); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := Canonical(in); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reference", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := canonicalReference(in); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// IsCanonical's fast path never calls a number canonical that Canonical rewrites: random
// doubles and decimals written with 1 to 20 digits, as integers, decimals and exponents.
func TestIsCanonicalNumbers(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200_000; i++ {
		var lit string
		switch i % 4 {
		case 0:
			lit = strconv.FormatFloat(rng.NormFloat64()*math.Pow(10, float64(rng.IntN(30)-12)), 'f', rng.IntN(20), 64)
		case 1:
			lit = strconv.FormatFloat(rng.Float64()*math.Pow(10, float64(rng.IntN(25)-8)), 'g', 1+rng.IntN(19), 64)
		case 2:
			lit = strconv.FormatFloat(float64(rng.Int64N(1<<53))/math.Pow(10, float64(rng.IntN(18))), 'f', -1, 64)
		default:
			lit = strconv.FormatInt(rng.Int64N(math.MaxInt64)>>rng.IntN(63), 10) + "." + strconv.FormatInt(rng.Int64N(1e6), 10)
		}
		raw := []byte(lit)
		same, err := jcs.IsCanonical(raw)
		c, cerr := jcs.Canonicalize(raw)
		if same && (cerr != nil || !bytes.Equal(c, raw)) {
			t.Fatalf("IsCanonical(%s) = true, but its canonical form is %s (%v)", lit, c, cerr)
		}
		if !same && cerr == nil && bytes.Equal(c, raw) {
			t.Fatalf("IsCanonical(%s) = false (%v), but it is its canonical form", lit, err)
		}
	}
}
