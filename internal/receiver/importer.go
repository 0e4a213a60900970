// Package importer publishes events read as JSON lines: every valid line is published, every
// invalid line is reported with its line number and reason, and nothing valid is held back
// because of an invalid neighbour.
package receiver

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"

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

// Import reads events as JSON lines from r, validates each (events.DecodeCanonicalizing: any
// valid JSON is accepted for the values compared, and stored in canonical form) and publishes
// the valid ones with their event id as Nats-Msg-Id, so importing the same file twice stores each
// event once (within the stream's duplicate window; beyond it, the analyzer's idempotent
// insert on event id is the defence). It returns after every publish is acknowledged; a publish
// that failed is an error, since then not everything valid was stored.
func Import(ctx context.Context, b *bus.Bus, r io.Reader) (Result, error) {
	var res Result
	p, err := b.NewPublisher()
	if err != nil {
		return res, err
	}
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
			if canon, perr := publishLine(ctx, p, raw); perr != nil {
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
		if failed, ok := bus.IsAckError(err); ok {
			res.Published -= len(failed)
		}
		return res, err
	}
	return res, nil
}

func publishLine(ctx context.Context, p *bus.Publisher, raw []byte) (canonicalized bool, err error) {
	env, canonicalized, err := events.DecodeCanonicalizing(raw)
	if err != nil {
		return false, err
	}
	if canonicalized {
		// Arguments, outputs, input or spec were valid JSON but not canonical: their canonical
		// form is what ditto stores.
		if raw, err = events.Encode(&env); err != nil {
			return false, err
		}
	}
	subject, err := events.SubjectOf(&env)
	if err != nil {
		return false, err
	}
	// Otherwise publish the bytes as given (they decoded and validated), not a re-encoding,
	// so that the stream holds exactly what the producer wrote.
	return canonicalized, p.Publish(ctx, subject, env.ID, raw)
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
