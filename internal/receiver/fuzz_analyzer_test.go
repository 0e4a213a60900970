//go:build cgo

package receiver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/warehouse"
)

// pipeline is producer serve (the receiver and its assembler, on an embedded nats-server) with
// an analyzer ingesting the stream into DuckDB as `analyzer serve` does, for the life of a
// fuzz target.
type pipeline struct {
	e        *env
	w        *warehouse.Warehouse
	ingested chan error // Ingest's result: it must never return while the target runs
}

func newPipeline(tb testing.TB) *pipeline {
	e := newEnv(tb, nil)
	ctx, cancel := context.WithCancel(context.Background())
	w, err := warehouse.Open(ctx, warehouse.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	p := &pipeline{e: e, w: w, ingested: make(chan error, 1)}
	go func() {
		p.ingested <- w.Ingest(ctx, e.bus, warehouse.IngestConfig{BatchWait: 5 * time.Millisecond, AckWait: 5 * time.Second})
	}()
	tb.Cleanup(func() {
		cancel()
		<-p.ingested
		_ = w.Close()
	})
	return p
}

// batchItems is what producer serve reads of an events body as items (splitBatch): a JSON
// array's elements, else the NDJSON lines that are not blank. ok is false when it reads none.
func batchItems(body []byte) (items [][]byte, ok bool) {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var raws []json.RawMessage
		if json.Unmarshal(trimmed, &raws) != nil {
			return nil, false
		}
		for _, r := range raws {
			items = append(items, r)
		}
		return items, true
	}
	for _, line := range bytes.Split(body, []byte{'\n'}) {
		if line = bytes.TrimSpace(line); len(line) > 0 {
			items = append(items, line)
		}
	}
	return items, len(items) > 0
}

// send posts body to /v1/events as NDJSON and checks the pipeline after it: the producer
// answered (no 5xx) and is still ready, the analyzer is still ingesting, and once it has caught
// up with the stream every event the producer accepted is stored in events or kept in
// rejected_events, and every message of the stream is accounted for.
func (p *pipeline) send(t *testing.T, body []byte) {
	resp, raw := p.e.post(t, "/v1/events", tokAll, "application/x-ndjson", body)
	if resp.StatusCode >= 500 {
		t.Fatalf("producer serve answered %d: %s", resp.StatusCode, raw)
	}
	r := decodeRespT(t, raw)
	p.checkReady(t)
	if r.Error == "" {
		items, _ := batchItems(body)
		if r.Accepted+len(r.Rejected) != len(items) {
			t.Fatalf("%d items, %d accepted and %d rejected", len(items), r.Accepted, len(r.Rejected))
		}
		rejected := map[int]bool{}
		for _, rj := range r.Rejected {
			rejected[rj.Index] = true
		}
		p.catchUp(t)
		for i, it := range items {
			if rejected[i] {
				continue
			}
			var ev struct {
				ID string `json:"id"`
			}
			if err := json.Unmarshal(it, &ev); err != nil || ev.ID == "" {
				t.Fatalf("item %d was accepted but has no id (%v): %q", i, err, it)
			}
			var n int64
			if err := p.w.DB().QueryRow(`SELECT (SELECT count(*) FROM events WHERE id = $1) + (SELECT count(*) FROM rejected_events WHERE msg_id = $1)`, ev.ID).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				t.Fatalf("accepted event %q is neither in events nor in rejected_events: %q", ev.ID, it)
			}
		}
	}
	p.checkIngesting(t)
}

func (p *pipeline) checkReady(t *testing.T) {
	t.Helper()
	resp, err := http.Get(p.e.ts.URL + "/readyz")
	if err != nil {
		t.Fatalf("readyz: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("producer serve is no longer ready: %d %s", resp.StatusCode, b)
	}
}

func (p *pipeline) checkIngesting(t *testing.T) {
	t.Helper()
	select {
	case err := <-p.ingested:
		p.ingested <- err // for Cleanup
		t.Fatalf("the analyzer stopped ingesting: %v", err)
	default:
	}
}

// catchUp waits until the analyzer has stored everything the stream holds, then checks that
// every message up to the watermark is an event, a duplicate of one, or a rejected message.
func (p *pipeline) catchUp(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := p.e.bus.Stream(ctx, events.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	last := info.State.LastSeq
	for {
		pos, err := p.w.Position(ctx, events.EventsStream)
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatal(err)
		}
		if err == nil && pos.Watermark >= last {
			if got := uint64(pos.Events + pos.Rejected + pos.Duplicates); got != pos.Watermark {
				t.Fatalf("watermark %d, but %d events, %d rejected and %d duplicates", pos.Watermark, pos.Events, pos.Rejected, pos.Duplicates)
			}
			return
		}
		p.checkIngesting(t)
		select {
		case <-ctx.Done():
			t.Fatalf("the analyzer did not catch up with stream sequence %d (at %d)", last, pos.Watermark)
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// FuzzServeIntoAnalyzer is issue 12's acceptance: arbitrary bytes as an NDJSON body through
// producer serve into the analyzer (real embedded NATS, real DuckDB). The analyzer never stops,
// every event the producer accepted is stored or in rejected_events, and the producer stays
// ready. The seeds are the reproductions (the lone-surrogate curl body, the 5,000-byte
// ignorable type, bytes that are not UTF-8, a repeated key, unsafe ids, implausible times)
// beside a valid run, alone and mixed in one body.
func FuzzServeIntoAnalyzer(f *testing.F) {
	valid := string(ndjson(f, runEvents(f, "prod", "fz-1", 2)))
	f.Add([]byte(reproSurrogate))
	f.Add([]byte(strings.TrimSuffix(strings.TrimPrefix(reproSurrogate, "["), "]") + "\n"))
	f.Add([]byte(valid))
	var mixed strings.Builder
	mixed.WriteString(valid)
	for _, tt := range hostileCases() {
		f.Add([]byte(tt.line))
		mixed.WriteString(tt.line + "\n")
	}
	f.Add([]byte(mixed.String()))
	f.Add([]byte(`{"schema":1,"id":"x","type":"run.started"` + "\n\n" + `[1,2]` + "\n\x00\xff"))
	f.Add([]byte("[" + strings.Join(strings.Split(strings.TrimSpace(valid), "\n"), ",") + "]"))
	p := newPipeline(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		p.send(t, body)
	})
}
