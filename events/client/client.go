package client

import (
	"bytes"
	"context"
	"encoding/json"

	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/dittolab/ditto/events"
)

// Client sends events to a ditto ingestion server. It is safe for concurrent use.
type Client struct {
	endpoint   string
	token      string
	hc         *http.Client
	source     string
	retries    int
	maxBackoff time.Duration
	now        func() time.Time
}

// Option configures a Client.
type Option func(*Client) error

// WithToken sets the bearer token (bound, on the server, to the studies it may write).
func WithToken(token string) Option {
	return func(c *Client) error {
		if strings.ContainsAny(token, " \r\n") {
			return fmt.Errorf("%w: token contains white space", ErrConfig)
		}
		c.token = token
		return nil
	}
}

// WithHTTPClient sets the HTTP client (timeouts, TLS, proxies). Default: a client with a 60s
// timeout.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) error {
		if hc == nil {
			return fmt.Errorf("%w: nil http client", ErrConfig)
		}
		c.hc = hc
		return nil
	}
}

// WithSource sets the source id recorded in every event (the agent or service name; never a
// secret). Default "go-client".
func WithSource(id string) Option {
	return func(c *Client) error {
		if id == "" {
			return fmt.Errorf("%w: empty source", ErrConfig)
		}
		c.source = id
		return nil
	}
}

// WithRetries sets how many times a send is retried on 429, 503 or a network error
// (default 5).
func WithRetries(n int) Option {
	return func(c *Client) error {
		if n < 0 {
			return fmt.Errorf("%w: retries %d", ErrConfig, n)
		}
		c.retries = n
		return nil
	}
}

// WithMaxBackoff caps the wait between retries, whatever Retry-After says (default 30s).
func WithMaxBackoff(d time.Duration) Option {
	return func(c *Client) error {
		if d <= 0 {
			return fmt.Errorf("%w: max backoff %v", ErrConfig, d)
		}
		c.maxBackoff = d
		return nil
	}
}

// WithClock sets the clock that times events (tests and examples).
func WithClock(now func() time.Time) Option {
	return func(c *Client) error {
		if now == nil {
			return fmt.Errorf("%w: nil clock", ErrConfig)
		}
		c.now = now
		return nil
	}
}

// New returns a client for the server at baseURL (e.g. http://localhost:4318).
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: base URL %q is not http(s)://host[:port]", ErrConfig, baseURL)
	}
	c := &Client{
		endpoint: strings.TrimSuffix(u.String(), "/") + "/v1/events",
		hc:       &http.Client{Timeout: 60 * time.Second},
		source:   "go-client", retries: 5, maxBackoff: 30 * time.Second, now: time.Now,
	}
	for _, o := range opts {
		if err := o(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// response mirrors the server's answer to POST /v1/events.
type response struct {
	Accepted int        `json:"accepted"`
	Rejected []Rejected `json:"rejected"`
	Error    string     `json:"error"`
}

// Send posts events (NDJSON) and returns once the server has stored them in JetStream. It
// retries on 429, 503 and network errors, waiting Retry-After (capped by WithMaxBackoff);
// re-sending is safe because the server stores each event id once. If the server refused some
// events for good, Send returns a *BatchError naming them (the others are stored).
func (c *Client) Send(ctx context.Context, evs []events.Envelope) error {
	if len(evs) == 0 {
		return nil
	}
	var body bytes.Buffer
	for i := range evs {
		b, err := events.Encode(&evs[i])
		if err != nil {
			return fmt.Errorf("client: event %d: %w", i, err)
		}
		body.Write(b)
		body.WriteByte('\n')
	}
	var lastErr error
	for attempt := 0; ; attempt++ {
		retryAfter, err := c.post(ctx, body.Bytes())
		if err == nil || retryAfter < 0 {
			return err
		}
		lastErr = err
		if attempt >= c.retries {
			return fmt.Errorf("client: giving up after %d attempts: %w", attempt+1, lastErr)
		}
		wait := min(retryAfter, c.maxBackoff)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("client: %w (last error: %v)", ctx.Err(), lastErr)
		case <-t.C:
		}
	}
}

// post sends one request. retryAfter < 0 means the outcome is final (success or an error
// not worth retrying); otherwise it is how long to wait before retrying.
func (c *Client) post(ctx context.Context, body []byte) (retryAfter time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return -1, fmt.Errorf("client: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return -1, fmt.Errorf("client: %w", ctx.Err())
		}
		return time.Second, fmt.Errorf("client: %w", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	var r response
	jsonErr := json.Unmarshal(raw, &r)
	switch {
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable:
		return parseRetryAfter(resp.Header.Get("Retry-After")), &StatusError{Code: resp.StatusCode, Message: message(r, raw)}
	case resp.StatusCode >= 500:
		return time.Second, &StatusError{Code: resp.StatusCode, Message: message(r, raw)}
	case jsonErr != nil:
		return -1, &StatusError{Code: resp.StatusCode, Message: message(r, raw)}
	case len(r.Rejected) > 0:
		return -1, &BatchError{Accepted: r.Accepted, Rejected: r.Rejected}
	case resp.StatusCode != http.StatusOK:
		return -1, &StatusError{Code: resp.StatusCode, Message: message(r, raw)}
	}
	return -1, nil
}

func message(r response, raw []byte) string {
	if r.Error != "" {
		return r.Error
	}
	s := strings.TrimSpace(string(raw))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// parseRetryAfter reads delay-seconds or an HTTP date; default 1s.
func parseRetryAfter(v string) time.Duration {
	if secs, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && secs >= 0 {
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return time.Second
}
