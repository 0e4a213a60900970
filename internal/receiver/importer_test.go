package receiver_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/dittolab/ditto/internal/receiver"
	"github.com/dittolab/ditto/internal/samples"
)

func TestImportGoodAndBadLines(t *testing.T) {
	b := bustest.NewServer(t).Connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lines := strings.Split(strings.TrimSpace(string(samples.Traces)), "\n")[:10]
	bad := []string{
		`{"schema":1,`, // malformed
		strings.Replace(lines[1], `"type":"plan.proposed"`, `"type":"plan.pondered"`, 1), // unknown type
		strings.Replace(lines[0], `"model":"gpt-4o-mini",`, ``, 1),                       // missing field
		strings.Replace(lines[2], `"study":"sample-prod"`, `"study":"sample prod"`, 1),   // unsafe token
		`{"pad":"` + strings.Repeat("x", events.MaxEventSize+10) + `"}`,                  // oversized
	}
	wantErr := []error{events.ErrMalformed, events.ErrUnknownType, events.ErrMissingField, events.ErrUnsafeToken, events.ErrTooLarge}
	// Interleave: good, bad, good, bad, ... then the remaining good lines, and a blank line.
	var in []string
	for i, bl := range bad {
		in = append(in, lines[i], bl)
	}
	in = append(in, "", "  ")
	in = append(in, lines[len(bad):]...)
	res, err := receiver.Import(ctx, b, strings.NewReader(strings.Join(in, "\n")), receiver.ImportConfig{})
	if err != nil {
		t.Fatalf("Import() error %v", err)
	}
	if res.Published != len(lines) || len(res.Rejected) != len(bad) {
		t.Fatalf("Import() published %d rejected %d, want %d and %d (%+v)", res.Published, len(res.Rejected), len(lines), len(bad), res.Rejected)
	}
	for i, r := range res.Rejected {
		if wantLine := 2 * (i + 1); r.Line != wantLine || !errors.Is(r.Err, wantErr[i]) {
			t.Errorf("rejected[%d] = line %d %v, want line %d %v", i, r.Line, r.Err, wantLine, wantErr[i])
		}
	}
	// A second import of the same file stores nothing new.
	if _, err := receiver.Import(ctx, b, bytes.NewReader(samples.Traces[:0]), receiver.ImportConfig{}); err != nil {
		t.Fatal(err)
	}
	res2, err := receiver.Import(ctx, b, strings.NewReader(strings.Join(in, "\n")), receiver.ImportConfig{})
	if err != nil || res2.Published != len(lines) {
		t.Fatalf("second Import() = %+v, %v", res2, err)
	}
	s, _ := b.Stream(ctx, events.EventsStream)
	info, _ := s.Info(ctx)
	if info.State.Msgs != uint64(len(lines)) {
		t.Errorf("stream holds %d messages after importing %d valid lines twice, want %d", info.State.Msgs, len(lines), len(lines))
	}
}
