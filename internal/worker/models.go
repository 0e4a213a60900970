package worker

import (
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/dittolab/ditto/internal/llm"
	"github.com/dittolab/ditto/internal/study"
)

// clients caches one OpenAI-compatible client per endpoint (clients are safe for concurrent
// use and pool their connections).
type clients struct {
	mu     sync.Mutex
	byKey  map[study.JobEndpoint]llm.Model
	client *http.Client
}

func newClients(concurrency int) *clients {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// Keep a connection per run in flight: the default of 2 idle connections per host would
	// make a busy worker open and close one per request.
	tr.MaxIdleConnsPerHost = max(concurrency*2, 8)
	tr.MaxIdleConns = max(concurrency*4, 100)
	return &clients{byKey: map[study.JobEndpoint]llm.Model{}, client: &http.Client{Transport: tr}}
}

// model returns the client of ep. Sim endpoints resolve to simBaseURL.
func (c *clients) model(ep study.JobEndpoint, simBaseURL string) (llm.Model, error) {
	key := ep
	if ep.Sim {
		if simBaseURL == "" {
			return nil, ErrNoSim
		}
		key.BaseURL = simBaseURL
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if m, ok := c.byKey[key]; ok {
		return m, nil
	}
	cfg := llm.Config{
		BaseURL: key.BaseURL, APIKeyEnv: key.APIKeyEnv, Timeout: key.Timeout(), MaxRetries: key.MaxRetries,
		UseMaxCompletionTokens: key.UseMaxCompletionTokens, HTTPClient: c.client,
	}
	if ep.Sim {
		// The simulated models answer at once or after a modelled latency; a short backoff
		// keeps a transient loopback failure from stalling a test or a demo.
		cfg.BackoffBase, cfg.BackoffMax = 50*time.Millisecond, time.Second
	}
	m, err := llm.NewOpenAI(cfg)
	if err != nil {
		return nil, fmt.Errorf("worker: endpoint %s: %w", ep.Name, err)
	}
	c.byKey[key] = m
	return m, nil
}

// closeIdle closes the clients' idle connections (at the end of Worker.Run).
func (c *clients) closeIdle() { c.client.CloseIdleConnections() }
