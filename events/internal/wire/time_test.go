package wire

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// utcTime reads what UnmarshalJSON reads, to the same time.Time (its location included), for
// every literal it accepts, and accepts every time in UTC as producers write it. The literals
// are times written by time.RFC3339Nano across years 0 to 9999 and the month ends, and the
// same with one byte changed, dropped or added: whatever utcTime accepts of those, UnmarshalJSON
// reads to the same value.
func TestUTCTimeAsUnmarshalJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var lits []string
	add := func(tm time.Time) {
		lits = append(lits, `"`+tm.UTC().Format(time.RFC3339Nano)+`"`)
		lits = append(lits, `"`+tm.UTC().Format("2006-01-02T15:04:05.000Z07:00")+`"`)
	}
	for _, y := range []int{0, 1, 4, 99, 100, 400, 1582, 1900, 1969, 1970, 2000, 2024, 2026, 2100, 9999} {
		for m := time.January; m <= time.December; m++ {
			first := time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
			add(first)
			add(first.AddDate(0, 1, 0).Add(-time.Nanosecond)) // the month's last nanosecond
		}
	}
	for range 20000 {
		add(time.Unix(r.Int64N(253402300800+62135596800)-62135596800, r.Int64N(1e9)).Truncate(time.Duration(r.IntN(4)) * time.Millisecond))
	}
	// Days past a month's end, hours, minutes and seconds out of range, leap seconds, and forms
	// UnmarshalJSON refuses or reads otherwise (an offset, ten digits): utcTime refuses them all.
	bad := []string{`"2023-02-29T00:00:00Z"`, `"1900-02-29T00:00:00Z"`,
		`"2026-04-31T00:00:00Z"`, `"2026-12-32T00:00:00Z"`, `"2026-00-01T00:00:00Z"`, `"2026-13-01T00:00:00Z"`, `"2026-12-00T00:00:00Z"`,
		`"2026-12-03T24:00:00Z"`, `"2026-12-03T23:60:00Z"`, `"2026-12-03T23:59:60Z"`, `"2026-12-03T23:59:59.Z"`,
		`"2026-12-03T23:59:59.1234567891Z"`, `"2026-12-03T23:59:59,5Z"`, `"2026-12-03T23:59:59+00:00"`, `"2026-12-03t23:59:59Z"`,
		`"2026-12-03T23:59:59z"`, `"+026-12-03T23:59:59Z"`, `"2026-1-03T23:59:59Z"`, `"2026-12-03T23:59:59.-1Z"`, `"2026-12-03T23:59:59.1a2Z"`}
	for _, l := range bad {
		if tm, ok := utcTime([]byte(l)); ok {
			t.Errorf("utcTime(%s) = %v, ok", l, tm)
		}
	}
	// Leap days that exist, and every literal above, are read.
	lits = append(lits, `"2024-02-29T00:00:00Z"`, `"2000-02-29T00:00:00Z"`)
	for _, l := range lits {
		if _, ok := utcTime([]byte(l)); !ok {
			t.Errorf("utcTime(%s) not ok: a time in UTC as producers write one", l)
		}
	}
	// Whatever utcTime accepts, of all of these and the same with one byte changed, dropped or
	// added, UnmarshalJSON reads to the same value.
	const alphabet = "0123456789-:.TZ+ az\""
	changed := append([]string(nil), bad...)
	for _, l := range lits[:4000] {
		i := r.IntN(len(l))
		c := alphabet[r.IntN(len(alphabet))]
		changed = append(changed, l[:i]+string(c)+l[i+1:], l[:i]+l[i+1:], l[:i]+string(c)+l[i:])
	}
	for _, l := range append(lits, changed...) {
		got, ok := utcTime([]byte(l))
		if !ok {
			continue
		}
		var want time.Time
		if err := want.UnmarshalJSON([]byte(l)); err != nil {
			t.Errorf("utcTime(%s) = %v, ok; UnmarshalJSON fails: %v", l, got, err)
		} else if !reflect.DeepEqual(got, want) {
			t.Errorf("utcTime(%s) = %#v, UnmarshalJSON %#v", l, got, want)
		}
	}
}
