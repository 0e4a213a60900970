package otlpmap_test

import (
	"fmt"
	"os"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/otlpmap"
)

func ExampleMapTrace() {
	raw, _ := os.ReadFile("testdata/genai.json") // a recorded OTLP/JSON export
	req, _ := otlpmap.DecodeJSON(raw)
	spans, _ := otlpmap.Spans(req)
	for i := range spans {
		spans[i].Study = "prod" // the server sets it from ditto.study or the token
	}
	res, err := otlpmap.MapTrace(spans, otlpmap.Config{}, true)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Study, res.Run)
	fmt.Println(res.Task, res.Model, res.Condition)
	for _, e := range res.Events {
		fmt.Println(e.Seq, e.Type, e.SpanID)
	}
	run, err := events.Fold(res.Events)
	fmt.Println(run.Tools, run.PromptTokens, run.CompletionTokens, err)
	// Output:
	// prod d20251130-5b8efff798038103d269b633813fc60c
	// invoice-triage gpt-4o-mini r7
	// 1 run.started eee19b7ec3c1b174
	// 2 model.called a000000000000002
	// 3 plan.proposed a000000000000001
	// 4 model.called a000000000000003
	// 5 tool.called a000000000000004
	// 6 tool.returned a000000000000004
	// 7 model.called a000000000000005
	// 8 tool.called a000000000000006
	// 9 tool.returned a000000000000006
	// 10 run.finished eee19b7ec3c1b174
	// [fetch_invoice route] 1220 95 <nil>
}
