package events_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/dittolab/ditto/events"
)

// An agent builds an event from its payload, fills what New leaves to it (sequence number,
// source), encodes it, and publishes the bytes on the event's subject with the event id as the
// message id, so that a re-publish is a no-op.
func Example() {
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	args, err := events.CanonicalValue(map[string]any{"invoice_id": "INV-1", "fields": []string{"total"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	e := events.New("prod-invoice", "run-0001", at, events.ToolCalled{CallID: "call-1", Tool: "fetch_invoice", Args: args})
	e.ID = events.DerivedID(at, "run-0001", "call-1") // New gives a fresh NewID; a fixed one prints the same every time
	e.Seq = 5
	e.Source = events.Source{Kind: events.SourceProduction, ID: "invoice-agent"}

	b, err := events.Encode(&e)
	if err != nil {
		fmt.Println(err)
		return
	}
	subject, _ := events.SubjectOf(&e)
	fmt.Println(subject)
	fmt.Println(string(b))
	// Output:
	// ditto.events.prod-invoice.run-0001.tool.called
	// {"schema":3,"id":"01M8NTXDM04YB6HR2MATZ7BYDR","type":"tool.called","time":"2026-11-30T09:00:00Z","study":"prod-invoice","run":"run-0001","attempt":1,"seq":5,"source":{"kind":"production","id":"invoice-agent"},"payload":{"call_id":"call-1","tool":"fetch_invoice","args":{"fields":["total"],"invoice_id":"INV-1"}}}
}

// A reader decodes what it receives and switches on the payload's type. A bad event is an
// error naming the field at fault.
func ExampleDecode() {
	line := []byte(`{"schema":1,"id":"01M8NTXDM04YB6HR2MATZ7BYDR","type":"model.called","time":"2026-11-30T09:00:00.25Z",` +
		`"study":"prod-invoice","run":"run-0001","attempt":1,"seq":2,"source":{"kind":"production","id":"invoice-agent"},` +
		`"payload":{"model":"gpt-4o","prompt_tokens":420,"completion_tokens":31,"latency_ms":850}}`)
	e, err := events.Decode(line)
	if err != nil {
		fmt.Println(err)
		return
	}
	switch p := e.Payload.(type) {
	case events.ModelCalled:
		fmt.Printf("%s/%s seq %d at %s: %s, %d+%d tokens\n", e.Study, e.Run, e.Seq, e.Time.Format(time.TimeOnly), p.Model, p.PromptTokens, p.CompletionTokens)
	case events.Unknown:
		fmt.Println("an ignorable event of a type this build does not know:", p.Type)
	}

	_, err = events.Decode([]byte(`{"schema":1,"id":"x","type":"tool.called","time":"2026-11-30T09:00:00Z","study":"s","run":"r",` +
		`"attempt":1,"seq":1,"source":{"kind":"production","id":"a"},"payload":{"call_id":"c1","args":{}}}`))
	var fe *events.FieldError
	if errors.As(err, &fe) {
		fmt.Println(fe.Field, errors.Is(err, events.ErrMissingField))
	}
	// Output:
	// prod-invoice/run-0001 seq 2 at 09:00:00: gpt-4o, 420+31 tokens
	// payload.tool true
}

// Canonical JSON makes equal values equal bytes: keys sorted, white space gone, numbers in one
// form. Arguments, outputs and plans are compared this way.
func ExampleCanonical() {
	a, _ := events.Canonical([]byte(`{"b": [1.50, 2e3], "a": "x"}`))
	b, _ := events.CanonicalValue(map[string]any{"a": "x", "b": []float64{1.5, 2000}})
	fmt.Println(string(a))
	fmt.Println(string(a) == string(b))

	_, err := events.Canonical([]byte(`{"a":1,"a":2}`))
	fmt.Println(errors.Is(err, events.ErrNotCanonical))
	// Output:
	// {"a":"x","b":[1.5,2000]}
	// true
	// true
}

// Fold replays a run's history into its state and refuses a history that is not well-formed.
func ExampleFold() {
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	var history []events.Envelope
	for i, p := range []events.Payload{
		events.RunStarted{Task: "invoice_triage", Model: "gpt-4o", Condition: "r42", Components: []string{}},
		events.ModelCalled{Model: "gpt-4o", PromptTokens: 420, CompletionTokens: 31},
		events.ToolCalled{CallID: "c1", Tool: "fetch_invoice", Args: events.MustCanonical(map[string]string{"invoice_id": "INV-1"})},
		events.ToolReturned{CallID: "c1", Tool: "fetch_invoice", OK: true, Output: events.MustCanonical(map[string]float64{"total": 120.5})},
		events.RunFinished{Status: events.StatusSucceeded, Success: true, Output: events.MustCanonical("ap-standard")},
	} {
		e := events.New("prod-invoice", "run-0001", at.Add(time.Duration(i)*time.Second), p)
		e.Seq, e.Source = int64(i+1), events.Source{Kind: events.SourceProduction, ID: "invoice-agent"}
		history = append(history, e)
	}

	run, err := events.Fold(history)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(run.Finished.Status, run.Tools, string(run.Calls[0].Args), run.PromptTokens, string(run.Output))

	_, err = events.Fold(history[1:]) // the run.started is missing
	fmt.Println(errors.Is(err, events.ErrNotStarted))
	// Output:
	// succeeded [fetch_invoice] {"invoice_id":"INV-1"} 420 "ap-standard"
	// true
}

// DerivedID gives an event made again from the same source the same id, so that it is stored
// once; NewID gives a new, time-ordered id each time.
func ExampleDerivedID() {
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	first := events.DerivedID(at, "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", "tool.called")
	again := events.DerivedID(at, "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", "tool.called")
	other := events.DerivedID(at, "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", "tool.returned")
	fmt.Println(first, first == again, first == other)
	fmt.Println(events.NewID(at) < events.NewID(at.Add(time.Millisecond)))
	// Output:
	// 01M8NTXDM08WJRJ9S9BGAFE5VS true false
	// true
}

// A store that keeps an event's envelope fields in columns and its payload as the producer's
// bytes rebuilds the event with DecodePayload.
func ExampleEnvelope_DecodePayload() {
	e, payload, err := events.DecodeWithPayload([]byte(`{"schema":1,"id":"01M8NTXDM04YB6HR2MATZ7BYDR","type":"state.entered",` +
		`"time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":3,"source":{"kind":"harness","id":"w1"},` +
		`"payload":{"state":"route", "from":"fetch"}}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(payload)) // as it was in the message

	row := e // the envelope's columns, read back
	row.Payload = nil
	if err := row.DecodePayload(payload); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%+v\n", row.Payload)
	// Output:
	// {"state":"route", "from":"fetch"}
	// {State:route From:fetch}
}
