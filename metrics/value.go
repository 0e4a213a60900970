package metrics

import (
	"encoding/json"
	"math"
	"strconv"
)

// Value is a float64 that may be undefined. An undefined Value marshals to
// JSON null; a defined one to the shortest round-trip decimal. Some refuses
// NaN and ±Inf, so no Value in a result ever carries them.
type Value struct {
	V     float64
	Valid bool
}

// Null is the undefined Value.
var Null = Value{}

// Some returns x as a defined Value, or Null when x is NaN or infinite.
// Negative zero becomes zero, so equal values marshal to equal bytes.
func Some(x float64) Value {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return Null
	}
	if x == 0 {
		x = 0
	}
	return Value{V: x, Valid: true}
}

// Ptr returns the value as a *float64, nil when undefined.
func (v Value) Ptr() *float64 {
	if !v.Valid {
		return nil
	}
	x := v.V
	return &x
}

// Or returns the value, or def when it is undefined.
func (v Value) Or(def float64) float64 {
	if !v.Valid {
		return def
	}
	return v.V
}

// String formats the value like its JSON form.
func (v Value) String() string {
	b, _ := v.MarshalJSON()
	return string(b)
}

// MarshalJSON implements json.Marshaler: null when undefined (or, defensively,
// NaN or infinite), otherwise the number as encoding/json would format it.
func (v Value) MarshalJSON() ([]byte, error) {
	if !v.Valid || math.IsNaN(v.V) || math.IsInf(v.V, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(v.V)
}

// UnmarshalJSON implements json.Unmarshaler; null gives Null.
func (v *Value) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*v = Null
		return nil
	}
	x, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return err
	}
	*v = Some(x)
	return nil
}

// Estimate is a per-cell pairwise metric with its uncertainty.
type Estimate struct {
	// Value is the metric; null with fewer than two runs (or, for AC, no
	// aligned calls).
	Value Value `json:"value"`
	// SE is the leave-one-run-out jackknife standard error; null with fewer
	// than three runs or when a leave-one-out value is undefined. When
	// Estimated is true it is itself estimated from the sample (see doc.go).
	SE Value `json:"se"`
	// Estimated is true when Value comes from a seeded sample of run pairs
	// rather than the exact computation over distinct sequences.
	Estimated bool `json:"estimated"`
	// SamplingSE is the Monte Carlo standard error of a sampled Value (its
	// distance from the exact value); null when Estimated is false.
	SamplingSE Value `json:"sampling_se"`
}
