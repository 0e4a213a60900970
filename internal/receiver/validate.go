package receiver

import (
	"flag"
	"fmt"
	"time"

	"github.com/dittolab/ditto/events"
)

// Window bounds the time of an event around its arrival. An event dated far in the future
// (9999-12-31) froze a study's scheduled reports, whose data then always ran "up to" it; one
// dated far in the past is a clock or a client gone wrong. Zero fields take the defaults.
type Window struct {
	// MaxAge is how long before its arrival an event may be dated; default 10 years, so that
	// archives of past production traces can be imported.
	MaxAge time.Duration
	// MaxSkew is how far after its arrival an event may be dated (clocks disagree); default
	// one hour.
	MaxSkew time.Duration
}

// Defaults of Window.
const (
	DefaultMaxEventAge = 10 * 365 * 24 * time.Hour
	DefaultMaxSkew     = time.Hour
)

func (w Window) withDefaults() Window {
	if w.MaxAge <= 0 {
		w.MaxAge = DefaultMaxEventAge
	}
	if w.MaxSkew <= 0 {
		w.MaxSkew = DefaultMaxSkew
	}
	return w
}

// RegisterFlags binds the window to fs, as serve and import both take it.
func (w *Window) RegisterFlags(fs *flag.FlagSet) {
	fs.DurationVar(&w.MaxAge, "max-event-age", DefaultMaxEventAge, "refuse events dated more than this before their arrival")
	fs.DurationVar(&w.MaxSkew, "max-clock-skew", DefaultMaxSkew, "refuse events dated more than this after their arrival")
}

// check refuses t unless it lies within the window around arrival, saying by how much and
// which setting moves the bound.
func (w Window) check(t, arrival time.Time) error {
	w = w.withDefaults()
	switch {
	case t.After(arrival.Add(w.MaxSkew)):
		return fmt.Errorf("%w: %s is %s after its arrival at %s; events may be dated at most %s ahead (--max-clock-skew)",
			ErrImplausibleTime, t.UTC().Format(time.RFC3339), roughly(t.Sub(arrival)), arrival.UTC().Format(time.RFC3339), w.MaxSkew)
	case t.Before(arrival.Add(-w.MaxAge)):
		return fmt.Errorf("%w: %s is %s before its arrival at %s; events may be at most %s old (--max-event-age)",
			ErrImplausibleTime, t.UTC().Format(time.RFC3339), roughly(arrival.Sub(t)), arrival.UTC().Format(time.RFC3339), w.MaxAge)
	}
	return nil
}

// roughly writes a duration that may span millennia: time.Duration saturates at 292 years.
func roughly(d time.Duration) string {
	const year = 365.25 * 24 * float64(time.Hour)
	switch {
	case d == 1<<63-1 || d == -1<<63:
		return "more than 292 years"
	case float64(d) >= 2*year:
		return fmt.Sprintf("%.0f years", float64(d)/year)
	}
	return d.Round(time.Second).String()
}

// checkEvent is the one validation of an event arriving at ditto from outside, the same for
// producer serve (POST /v1/events) and producer import: it decodes raw
// (events.DecodeCanonicalizing: the envelope, the payload, every string valid Unicode, no
// repeated key, an id that travels unchanged as Nats-Msg-Id, subject-safe study, run and type;
// JSON values rewritten in canonical form), bounds its time around arrival, and returns the
// bytes to store (raw, or its canonical form when canonicalized) and the subject. Permission to
// write the study is the caller's (import has no principal).
func checkEvent(raw []byte, arrival time.Time, win Window) (env events.Envelope, data []byte, subject string, canonicalized bool, err error) {
	env, canonicalized, err = events.DecodeCanonicalizing(raw)
	if err != nil {
		return env, nil, "", false, err
	}
	if err := win.check(env.Time, arrival); err != nil {
		return env, nil, "", false, err
	}
	data = raw
	if canonicalized {
		if data, err = events.Encode(&env); err != nil {
			return env, nil, "", false, err
		}
	}
	subject, err = events.SubjectOf(&env)
	return env, data, subject, canonicalized, err
}
