package otlpmap

import (
	"math"
	"strconv"
	"strings"
)

// Str returns the first of keys that is set to a non-empty scalar, as a string.
func (a Attrs) Str(keys ...string) (string, bool) {
	for _, k := range keys {
		switch v := a[k].(type) {
		case string:
			if v != "" {
				return v, true
			}
		case int64:
			return strconv.FormatInt(v, 10), true
		case float64:
			return strconv.FormatFloat(v, 'g', -1, 64), true
		case bool:
			return strconv.FormatBool(v), true
		}
	}
	return "", false
}

// Int returns the first of keys that holds an integer (an integral double, or a decimal
// string, also counts: exporters disagree).
func (a Attrs) Int(keys ...string) (int64, bool) {
	for _, k := range keys {
		switch v := a[k].(type) {
		case int64:
			return v, true
		case float64:
			if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
				return int64(v), true
			}
		case string:
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
				return n, true
			}
		}
	}
	return 0, false
}

// Bool returns the first of keys that holds a bool (or "true"/"false").
func (a Attrs) Bool(keys ...string) (bool, bool) {
	for _, k := range keys {
		switch v := a[k].(type) {
		case bool:
			return v, true
		case string:
			if b, err := strconv.ParseBool(v); err == nil {
				return b, true
			}
		}
	}
	return false, false
}

// Strs returns the first of keys as a list of strings (a scalar is a list of one).
func (a Attrs) Strs(keys ...string) ([]string, bool) {
	for _, k := range keys {
		switch v := a[k].(type) {
		case []any:
			var out []string
			for _, e := range v {
				if s, ok := e.(string); ok && s != "" {
					out = append(out, s)
				}
			}
			if len(out) > 0 {
				return out, true
			}
		case string:
			if v != "" {
				return []string{v}, true
			}
		}
	}
	return nil, false
}

// Raw returns the first of keys that is set, whatever its type.
func (a Attrs) Raw(keys ...string) (any, bool) {
	for _, k := range keys {
		if v, ok := a[k]; ok && v != nil {
			if s, isStr := v.(string); isStr && s == "" {
				continue
			}
			return v, true
		}
	}
	return nil, false
}
