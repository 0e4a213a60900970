package receiver

// Import publishes events read as JSON lines: every valid line is published, every invalid
// line is reported with its line number and reason, and nothing valid is held back because of
// an invalid neighbour.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
)

// Rejected is one line that was not published.
type Rejected struct {
	Line int // 1-based
	Err  error
}

// Result counts what Import did.
type Result struct {
	Lines     int // non-blank lines read
	Published int // lines published and acknowledged
	// Canonicalized counts the published lines whose JSON values (arguments, outputs, input,
	// spec) were stored in canonical form rather than as written.
	Canonicalized int
	Rejected      []Rejected
}

// ImportConfig configures Import. Zero fields take the defaults.
type ImportConfig struct {
	Times Window           // bounds event times around their arrival (now)
	Now   func() time.Time // the clock; default time.Now
}

// Import reads events as JSON lines from r, validates each exactly as producer serve does
// (checkEvent) and publishes the valid ones with their event id as Nats-Msg-Id, so importing
// the same file twice stores each event once (within the stream's duplicate window; beyond it,
// the analyzer's idempotent insert on event id is the defence). It returns after every publish
// is acknowledged; a publish that failed is also reported as a rejected line (with its line
// number), and is an error, since then not everything valid was stored.
func Import(ctx context.Context, b *bus.Bus, r io.Reader, cfg ImportConfig) (Result, error) {
	var res Result
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	p, err := b.NewPublisher()
	if err != nil {
		return res, err
	}
	lineOf := map[string]int{} // event id → the line that published it first
	br := bufio.NewReaderSize(r, 64<<10)
	for line := 1; ; line++ {
		raw, tooLong, err := readLine(br, events.MaxEventSize)
		if err != nil && err != io.EOF {
			res.Rejected = append(res.Rejected, Rejected{Line: line, Err: fmt.Errorf("read: %w", err)})
			break
		}
		if tooLong {
			res.Lines++
			res.Rejected = append(res.Rejected, Rejected{Line: line,
				Err: fmt.Errorf("%w: longer than %d bytes", events.ErrTooLarge, events.MaxEventSize)})
		} else if raw = bytes.TrimSpace(raw); len(raw) > 0 {
			res.Lines++
			if canon, perr := publishLine(ctx, p, raw, line, cfg, lineOf); perr != nil {
				if ctx.Err() != nil {
					return res, perr
				}
				res.Rejected = append(res.Rejected, Rejected{Line: line, Err: perr})
			} else {
				res.Published++
				if canon {
					res.Canonicalized++
				}
			}
		}
		if err == io.EOF {
			break
		}
	}
	if err := p.Wait(ctx); err != nil {
		failed, ok := bus.IsAckError(err)
		if !ok {
			return res, err
		}
		res.Published -= len(failed)
		for _, f := range failed {
			res.Rejected = append(res.Rejected, Rejected{Line: lineOf[f.MsgID], Err: fmt.Errorf("%w: %v", ErrNotStored, f.Err)})
		}
		slices.SortStableFunc(res.Rejected, func(a, b Rejected) int { return a.Line - b.Line })
		return res, fmt.Errorf("%w: %d event(s) not acknowledged; import the file again (events are idempotent on their id)", ErrNotStored, len(failed))
	}
	return res, nil
}

func publishLine(ctx context.Context, p *bus.Publisher, raw []byte, line int, cfg ImportConfig, lineOf map[string]int) (canonicalized bool, err error) {
	env, data, subject, canonicalized, err := checkEvent(raw, cfg.Now(), cfg.Times)
	if err != nil {
		return false, err
	}
	if _, seen := lineOf[env.ID]; !seen {
		lineOf[env.ID] = line
	}
	// The bytes as given when they were canonical (they decoded and validated), so that the
	// stream holds exactly what the producer wrote; else their canonical form.
	return canonicalized, p.Publish(ctx, subject, env.ID, data)
}

// readLine returns the next line without its newline. A line longer than limit is consumed
// and reported as tooLong, so that one oversized line does not stop the lines after it.
func readLine(br *bufio.Reader, limit int) (line []byte, tooLong bool, err error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(buf)+len(chunk) > limit+1 {
			tooLong = true
			buf = buf[:0]
		} else {
			buf = append(buf, chunk...)
		}
		switch err {
		case bufio.ErrBufferFull:
			continue
		case nil:
			return buf, tooLong, nil
		default:
			return buf, tooLong, err
		}
	}
}
