package words

import (
	"math"
	"strconv"
	"time"
)

// durationUnits are the units Duration speaks in, largest first.
var durationUnits = []struct {
	d    time.Duration
	name string
}{
	{24 * time.Hour, "day"},
	{time.Hour, "hour"},
	{time.Minute, "minute"},
	{time.Second, "second"},
}

// Duration says a duration in words, in its two largest units, rounded to the smaller:
// "30 minutes", "1 hour 30 minutes", "1 minute 16 seconds", "2 days 3 hours"; below a second
// in milliseconds ("250 milliseconds"), below ten seconds with a tenth ("1.5 seconds"). Never
// Go's "30m0s".
func Duration(d time.Duration) string {
	if d < 0 {
		return "minus " + Duration(-d)
	}
	switch {
	case d == 0:
		return "0 seconds"
	case d < time.Millisecond:
		return plural(float64(d.Microseconds()), "microsecond")
	case d < time.Second:
		return plural(float64(d.Round(time.Millisecond).Milliseconds()), "millisecond")
	case d < 10*time.Second && d%time.Second != 0:
		return plural(math.Round(d.Seconds()*10)/10, "second")
	}
	for i, u := range durationUnits {
		if d < u.d {
			continue
		}
		if i == len(durationUnits)-1 {
			return plural(math.Round(d.Seconds()), u.name)
		}
		next := durationUnits[i+1]
		r := d.Round(next.d)
		if i > 0 && r >= durationUnits[i-1].d {
			return Duration(r) // 59m59.6s is 1 hour, not 60 minutes
		}
		d = r
		big, rest := d/u.d, (d%u.d)/next.d
		s := plural(float64(big), u.name)
		if rest > 0 {
			s += " " + plural(float64(rest), next.name)
		}
		return s
	}
	return plural(math.Round(d.Seconds()), "second")
}

// plural prints n and the unit, made plural unless n is 1.
func plural(n float64, unit string) string {
	s := strconv.FormatFloat(n, 'f', -1, 64) + " " + unit
	if n != 1 {
		s += "s"
	}
	return s
}
