package wire

import "time"

// utcTime reads the quoted literal of a time as producers write one (time.RFC3339Nano in UTC:
// `"2006-01-02T15:04:05.999999999Z"`, zero to nine fractional digits) into the time.Time that
// time.Time.UnmarshalJSON makes of it, without its general parse (and time.Date's
// normalization): about a fifth of reading an envelope. ok false for any other literal, also a
// valid one (an offset, more digits), which the caller then hands to UnmarshalJSON; so the
// fields it accepts are exactly checked, in UnmarshalJSON's ranges (its day by month and leap
// year), and what it returns for them is what UnmarshalJSON returns (TestUTCTimeAsUnmarshalJSON).
func utcTime(lit []byte) (t time.Time, ok bool) {
	n := len(lit)
	if n < len(`"2006-01-02T15:04:05Z"`) || n > len(`"2006-01-02T15:04:05.999999999Z"`) ||
		lit[0] != '"' || lit[n-2] != 'Z' || lit[n-1] != '"' {
		return t, false
	}
	b := lit[1 : n-2] // 2006-01-02T15:04:05, then a fraction if any
	if b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' {
		return t, false
	}
	ok = true
	num := func(b []byte) int64 {
		var x int64
		for _, c := range b {
			if c < '0' || c > '9' {
				ok = false
			}
			x = x*10 + int64(c-'0')
		}
		return x
	}
	year, month, day := num(b[0:4]), num(b[5:7]), num(b[8:10])
	hour, minute, sec := num(b[11:13]), num(b[14:16]), num(b[17:19])
	var nsec int64
	if frac := b[19:]; len(frac) > 0 {
		if len(frac) < 2 || frac[0] != '.' {
			return time.Time{}, false
		}
		nsec = num(frac[1:])
		for range 10 - len(frac) {
			nsec *= 10
		}
	}
	if !ok || month < 1 || month > 12 || day < 1 || day > daysIn(month, year) || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	unix := daysSinceEpoch(year, month, day)*86400 + hour*3600 + minute*60 + sec
	return time.Unix(unix, nsec).UTC(), true
}

// daysIn is the number of days of month in year (proleptic Gregorian), as time.Date counts them.
func daysIn(month, year int64) int64 {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysSinceEpoch is the number of days from 1970-01-01 to the date (proleptic Gregorian, year
// 0 to 9999): the civil-to-days count of H. Hinnant's date algorithms, eras of 400 years from
// March 1st.
func daysSinceEpoch(year, month, day int64) int64 {
	if month <= 2 {
		year--
	}
	era := year / 400
	if year < 0 {
		era = (year - 399) / 400
	}
	yoe := year - era*400  // [0, 399]
	mp := (month + 9) % 12 // March is 0
	doy := (153*mp+2)/5 + day - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}
