package queryapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// URLFileName is the file in the data directory where a serving analyzer writes its base URL,
// so that `analyzer sql`, `export` and `status` find it (as the bus does with nats.url).
const URLFileName = "analyzer.url"

// WriteURLFile records baseURL in <dataDir>/analyzer.url (atomically: a reader never sees half
// a URL).
func WriteURLFile(dataDir, baseURL string) error {
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return fmt.Errorf("api: url file: %w", err)
	}
	tmp, err := os.CreateTemp(dataDir, URLFileName+".*")
	if err != nil {
		return fmt.Errorf("api: url file: %w", err)
	}
	_, err = tmp.WriteString(baseURL + "\n")
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dataDir, URLFileName))
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("api: url file: %w", err)
	}
	return nil
}

// RemoveURLFile removes <dataDir>/analyzer.url if it still holds baseURL (another analyzer
// may have replaced it since).
func RemoveURLFile(dataDir, baseURL string) error {
	path := filepath.Join(dataDir, URLFileName)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("api: url file: %w", err)
	}
	if strings.TrimSpace(string(b)) != baseURL {
		return nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("api: url file: %w", err)
	}
	return nil
}

// Discover returns a client for the analyzer serving dataDir, if <dataDir>/analyzer.url names
// one whose /healthz answers; otherwise an error wrapping ErrNoServer.
func Discover(ctx context.Context, dataDir, token string) (*Client, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, URLFileName))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoServer, err)
	}
	c := NewClient(strings.TrimSpace(string(b)), token)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := c.Health(ctx); err != nil {
		return nil, fmt.Errorf("%w: %s does not answer: %v", ErrNoServer, c.BaseURL, err)
	}
	return c, nil
}

// Client talks to a serving analyzer.
type Client struct {
	BaseURL string // http://host:port
	Token   string // bearer token, if the server wants one
	HTTP    *http.Client
}

// NewClient returns a client for baseURL.
func NewClient(baseURL, token string) *Client {
	return &Client{BaseURL: strings.TrimRight(baseURL, "/"), Token: token, HTTP: &http.Client{}}
}
