package simllm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/dittolab/ditto/internal/simllm"
)

// Serve the simulated models on a free loopback port and list them, as any OpenAI client would.
func ExampleServe() {
	ctx, cancel := context.WithCancel(context.Background())
	baseURL, wait, err := simllm.Serve(ctx, "127.0.0.1:0", simllm.Config{LatencyScale: 0})
	if err != nil {
		panic(err)
	}
	defer func() { cancel(); _ = wait() }()

	resp, err := http.Get(baseURL + "/models")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var list struct {
		Data []struct {
			ID      string `json:"id"`
			OwnedBy string `json:"owned_by"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		panic(err)
	}
	for _, m := range list.Data {
		fmt.Println(m.ID, m.OwnedBy)
	}
	// Output:
	// sim-steady ditto-simulated
	// sim-wobbly ditto-simulated
}
