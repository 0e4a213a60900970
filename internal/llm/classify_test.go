package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
)

// TestChatClassifiesFailures checks what a failed call says of itself: permanent failures are
// not retried (one request), transient ones are retried until the retries run out, and the
// kind is the cause the harness records.
func TestChatClassifiesFailures(t *testing.T) {
	tests := []struct {
		name          string
		status        int
		body          string
		wantKind      string
		wantPermanent bool
		wantRequests  int // with MaxRetries 2
		wantInDetail  string
	}{
		{"401", 401, `{"error":{"message":"Incorrect API key provided: sk-abc***xyz","type":"invalid_request_error","code":"invalid_api_key"}}`,
			events.CauseUnauthorized, true, 1, "refused the API key (HTTP 401)"},
		{"403", 403, `{"error":{"message":"forbidden","type":"invalid_request_error"}}`, events.CauseUnauthorized, true, 1, "HTTP 403"},
		{"404", 404, `{"error":{"message":"The model gpt-9 does not exist","type":"invalid_request_error","code":"model_not_found"}}`,
			events.CauseModelNotFound, true, 1, "gpt-9 does not exist"},
		{"400 unknown model", 400, `{"error":{"message":"unknown model \"x\"","type":"invalid_request_error","code":"model_not_found"}}`,
			events.CauseModelNotFound, true, 1, "does not serve the model"},
		{"400 context", 400, `{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}`,
			KindContextLength, true, 1, "context window"},
		{"400 other", 400, `{"error":{"message":"bad tool schema","type":"invalid_request_error"}}`, events.CauseBadRequest, true, 1, "bad tool schema"},
		{"429 quota", 429, `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`,
			events.CauseRateLimited, true, 1, "quota"},
		{"429", 429, `{"error":{"message":"slow down","type":"requests"}}`, events.CauseRateLimited, false, 3, "rate limited"},
		{"503", 503, `{"error":{"message":"overloaded","type":"server_error"}}`, events.CauseServerError, false, 3, "HTTP 503"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var requests atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				requests.Add(1)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			ce := chatError(t, srv.URL+"/v1")
			if ce.Kind != tt.wantKind || ce.Permanent() != tt.wantPermanent || ce.StatusCode != tt.status {
				t.Errorf("CallError = kind %q permanent %v status %d, want %q %v %d", ce.Kind, ce.Permanent(), ce.StatusCode,
					tt.wantKind, tt.wantPermanent, tt.status)
			}
			if got := int(requests.Load()); got != tt.wantRequests || ce.Attempts != tt.wantRequests {
				t.Errorf("requests = %d, attempts %d, want %d", got, ce.Attempts, tt.wantRequests)
			}
			if !strings.Contains(ce.Detail, tt.wantInDetail) {
				t.Errorf("Detail = %q, want it to contain %q", ce.Detail, tt.wantInDetail)
			}
			if strings.Contains(ce.Detail, "sk-abc") {
				t.Errorf("Detail = %q quotes the key", ce.Detail)
			}
		})
	}
}

// TestChatNothingListening: a refused connection is transient (retried), and its kind says
// the endpoint was not reached.
func TestChatNothingListening(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there any more
	ce := chatError(t, fmt.Sprintf("http://%s/v1", addr))
	if ce.Kind != events.CauseUnreachable || ce.Permanent() || ce.Attempts != 3 || ce.StatusCode != 0 {
		t.Errorf("CallError = kind %q permanent %v attempts %d status %d, want unreachable, transient, 3 attempts, no status",
			ce.Kind, ce.Permanent(), ce.Attempts, ce.StatusCode)
	}
	if !strings.Contains(ce.Detail, "refused") {
		t.Errorf("Detail = %q, want it to say the connection was refused", ce.Detail)
	}
}

func TestMissingKeyIsErrMissingKey(t *testing.T) {
	t.Setenv("DITTO_TEST_UNSET_KEY", "")
	_, err := NewOpenAI(Config{BaseURL: "http://127.0.0.1:9/v1", APIKeyEnv: "DITTO_TEST_UNSET_KEY"})
	if !errors.Is(err, ErrMissingKey) || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "DITTO_TEST_UNSET_KEY") {
		t.Errorf("NewOpenAI(unset key) = %v, want ErrMissingKey and ErrConfig naming the variable", err)
	}
}

// chatError makes one call with 2 retries (backoffs not slept) and returns its CallError.
func chatError(t *testing.T, baseURL string) *CallError {
	t.Helper()
	return callError(t, Config{BaseURL: baseURL, Model: "m", MaxRetries: 2, Timeout: 5 * time.Second,
		Sleep: func(ctx context.Context, d time.Duration) error { return ctx.Err() }})
}

// callError makes one call with a client of cfg and returns its CallError.
func callError(t *testing.T, cfg Config) *CallError {
	t.Helper()
	c, err := NewOpenAI(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Chat(context.Background(), Request{Messages: []Message{{Role: RoleUser, Content: "x"}}})
	var ce *CallError
	if !errors.As(err, &ce) {
		t.Fatalf("Chat error = %v, want *CallError", err)
	}
	return ce
}

// TestEchoedKeyTakenOutBeforeClipping: an endpoint quoting the key in a long error message,
// the key across the 300 bytes the detail keeps: no part of the key is in the detail.
func TestEchoedKeyTakenOutBeforeClipping(t *testing.T) {
	const key = "sk-live-0123456789abcdefghijklmnop"
	t.Setenv("DITTO_KEY_CLIP", key)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		// "Bearer " + key starts at byte 285 of the message: a clip at 300 cuts the key.
		fmt.Fprintf(w, `{"error":{"message":"%s%s","type":"invalid_request_error"}}`, strings.Repeat("x", 285), r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	ce := callError(t, Config{BaseURL: srv.URL, APIKeyEnv: "DITTO_KEY_CLIP", Model: "m", Timeout: 5 * time.Second})
	if strings.Contains(ce.Detail, key[:6]) || !strings.Contains(ce.Detail, "Bearer [re") {
		t.Errorf("detail %q holds part of the key, or does not say where it was taken out", ce.Detail)
	}
}
