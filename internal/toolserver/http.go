package toolserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/dittolab/ditto/internal/taskfile"
	"github.com/dittolab/ditto/internal/tasks"
)

// maxHTTPAnswer bounds the answer of an HTTP tool.
const maxHTTPAnswer = 8 << 20

// bindHTTP binds a tool served at an HTTP endpoint: POST of the arguments as JSON to
// base_url + endpoint (default "/<name>"), the JSON answer is the output. A 4xx answer is the
// tool refusing the call (its body is the error the model is shown); a 5xx answer, no answer
// or an answer that is not JSON is the server failing: unavailable.
func (p *Pool) bindHTTP(f *taskfile.Task, i int, server string, s *taskfile.HTTPServer) tasks.Binding {
	tl := &f.Tools[i]
	ep := tl.Endpoint
	if ep == "" {
		ep = "/" + tl.Name
	}
	url := strings.TrimSuffix(s.BaseURL, "/") + "/" + strings.TrimPrefix(ep, "/")
	headers := s.HeadersEnv
	origin := tasks.Origin{Server: server, Name: s.BaseURL, Transport: "http"}
	name := tl.Name
	exec := func(ctx context.Context, _ *tasks.Instance, args json.RawMessage) (json.RawMessage, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(args))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		req.Header = p.headers(headers)
		req.Header.Set("Content-Type", "application/json")
		if key := tasks.IdempotencyKey(ctx); key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		resp, err := p.httpClient().Do(req)
		if err != nil {
			return nil, unavailable("http server "+server, err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxHTTPAnswer+1))
		switch {
		case err != nil:
			return nil, unavailable("http server "+server, err)
		case len(body) > maxHTTPAnswer:
			return nil, fmt.Errorf("%s: answer larger than %d bytes", name, maxHTTPAnswer)
		case resp.StatusCode >= 500:
			return nil, unavailable("http server "+server, fmt.Errorf("%s: %s", resp.Status, clipText(body)))
		case resp.StatusCode >= 300:
			return nil, fmt.Errorf("%s: %s: %s", name, resp.Status, clipText(body))
		case !json.Valid(body):
			return nil, unavailable("http server "+server, fmt.Errorf("%s: answer is not JSON", name))
		}
		return body, nil
	}
	return tasks.Binding{Exec: exec, Origin: func() tasks.Origin { return origin }}
}

func clipText(b []byte) string {
	const n = 512
	s := strings.TrimSpace(string(b))
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}
