package toolserver

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/dittolab/ditto/internal/taskfile"
	"github.com/dittolab/ditto/internal/tasks"
)

// DefaultConnectTimeout bounds starting or reaching a server and reading its tool list.
const DefaultConnectTimeout = 30 * time.Second

// Pool binds task-file tools to their servers and keeps the connections: one per server of
// each task file (by digest), opened at the first Bind and shared by every call. A Pool is
// safe for concurrent use; Close ends every connection (and the commands it started).
type Pool struct {
	// ConnectTimeout bounds starting or reaching a server (0: DefaultConnectTimeout).
	ConnectTimeout time.Duration
	// Stderr receives the standard error of the MCP server commands (nil: discarded).
	Stderr io.Writer
	// Getenv reads the variables named by headers_env (nil: os.Getenv).
	Getenv func(string) string
	// HTTPClient makes the calls of HTTP tools and Streamable HTTP sessions (nil: a client
	// without a timeout; each call is bounded by its context).
	HTTPClient *http.Client

	mu     sync.Mutex
	conns  map[string]*mcpConn // by task digest + "/" + server name
	closed bool
}

var _ tasks.Binder = (*Pool)(nil)

// Bind binds tool i of f to its server (tasks.Binder).
func (p *Pool) Bind(f *taskfile.Task, i int) (tasks.Binding, error) {
	tl := &f.Tools[i]
	srv, ok := f.Servers[tl.Server]
	if !ok {
		return tasks.Binding{}, problem(fmt.Sprintf("tools[%d].server", i), "unknown server %q", tl.Server)
	}
	switch {
	case srv.MCP != nil:
		c, err := p.mcp(f, tl.Server, srv.MCP)
		if err != nil {
			return tasks.Binding{}, err // wraps tasks.ErrToolUnavailable
		}
		return c.bind(f, i)
	case srv.HTTP != nil:
		return p.bindHTTP(f, i, tl.Server, srv.HTTP), nil
	}
	return tasks.Binding{}, problem(fmt.Sprintf("servers.%s", tl.Server), "neither mcp nor http")
}

// Close ends every connection and the server commands it started.
func (p *Pool) Close() error {
	p.mu.Lock()
	conns := p.conns
	p.conns, p.closed = nil, true
	p.mu.Unlock()
	var errs []error
	keys := make([]string, 0, len(conns))
	for k := range conns {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := conns[k].close(); err != nil {
			errs = append(errs, fmt.Errorf("toolserver: %s: %w", k, err))
		}
	}
	return errors.Join(errs...)
}

// mcp returns the connection to an MCP server of f, opening it at the first call.
func (p *Pool) mcp(f *taskfile.Task, name string, s *taskfile.MCPServer) (*mcpConn, error) {
	key := f.Digest() + "/" + name
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errors.New("toolserver: pool closed")
	}
	if p.conns == nil {
		p.conns = map[string]*mcpConn{}
	}
	c, ok := p.conns[key]
	if !ok {
		c = &mcpConn{name: name, spec: s, pool: p}
		p.conns[key] = c
	}
	p.mu.Unlock()
	return c, c.open()
}

func (p *Pool) getenv(k string) string {
	if p.Getenv != nil {
		return p.Getenv(k)
	}
	return os.Getenv(k)
}

func (p *Pool) httpClient() *http.Client {
	if p.HTTPClient != nil {
		return p.HTTPClient
	}
	return http.DefaultClient
}

func (p *Pool) connectTimeout() time.Duration {
	if p.ConnectTimeout > 0 {
		return p.ConnectTimeout
	}
	return DefaultConnectTimeout
}

// problem is a binding problem at a path of the task file.
func problem(path, format string, args ...any) error {
	return &taskfile.Error{Problems: []*taskfile.Problem{{Path: path, Msg: fmt.Sprintf(format, args...)}}}
}

// unavailable wraps err as a server that was not reached or did not answer.
func unavailable(server string, err error) error {
	return fmt.Errorf("%w: %s: %w", tasks.ErrToolUnavailable, server, err)
}

// headers returns the HTTP headers named by headers_env, read from the environment.
func (p *Pool) headers(m map[string]string) http.Header {
	h := http.Header{}
	for k, env := range m {
		h.Set(k, p.getenv(env))
	}
	return h
}

// IdempotencyMetaKey is the _meta member of an MCP tool call holding its idempotency key.
const IdempotencyMetaKey = "dev.ditto/idempotency_key"

// textOf joins the text parts of a tool's answer.
func textOf(parts []string) string { return strings.Join(parts, "\n") }
