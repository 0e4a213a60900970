package toolserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dittolab/ditto/internal/taskfile"
	"github.com/dittolab/ditto/internal/tasks"
)

// clientInfo is how ditto introduces itself to an MCP server.
var clientInfo = &mcp.Implementation{Name: "ditto-harness", Version: "1"}

// mcpConn is the session with one MCP server of one task file.
type mcpConn struct {
	name string // the server's key in the task file
	spec *taskfile.MCPServer
	pool *Pool

	once      sync.Once
	err       error // of opening
	session   *mcp.ClientSession
	origin    tasks.Origin
	tools     map[string]*mcp.Tool
	toolNames []string
}

func (c *mcpConn) open() error {
	c.once.Do(func() { c.err = c.connect() })
	return c.err
}

func (c *mcpConn) connect() error {
	ctx, cancel := context.WithTimeout(context.Background(), c.pool.connectTimeout())
	defer cancel()
	var t mcp.Transport
	c.origin = tasks.Origin{Server: c.name}
	switch {
	case len(c.spec.Command) > 0:
		cmd := exec.Command(c.spec.Command[0], c.spec.Command[1:]...)
		cmd.Dir = c.spec.Dir
		cmd.Env = os.Environ()
		for _, k := range sortedKeys(c.spec.Env) {
			cmd.Env = append(cmd.Env, k+"="+c.spec.Env[k])
		}
		cmd.Stderr = c.pool.Stderr
		if cmd.Stderr == nil {
			cmd.Stderr = io.Discard
		}
		t = &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
		c.origin.Transport = "stdio"
	case c.spec.URL != "":
		hc := *c.pool.httpClient()
		if len(c.spec.HeadersEnv) > 0 {
			hc.Transport = headerTransport{base: hc.Transport, h: c.pool.headers(c.spec.HeadersEnv)}
		}
		t = &mcp.StreamableClientTransport{Endpoint: c.spec.URL, HTTPClient: &hc, MaxRetries: -1, DisableStandaloneSSE: true}
		c.origin.Transport = "streamable_http"
	default:
		return errors.New("mcp server has neither command nor url")
	}
	client := mcp.NewClient(clientInfo, nil)
	s, err := client.Connect(ctx, t, nil)
	if err != nil {
		return fmt.Errorf("%w: cannot connect to mcp server %s: %w", tasks.ErrToolUnavailable, c.name, err)
	}
	if ir := s.InitializeResult(); ir != nil && ir.ServerInfo != nil {
		c.origin.Name, c.origin.Version = ir.ServerInfo.Name, ir.ServerInfo.Version
	}
	c.tools = map[string]*mcp.Tool{}
	for tool, err := range s.Tools(ctx, nil) {
		if err != nil {
			_ = s.Close()
			return fmt.Errorf("%w: mcp server %s: listing its tools: %w", tasks.ErrToolUnavailable, c.name, err)
		}
		c.tools[tool.Name] = tool
		c.toolNames = append(c.toolNames, tool.Name)
	}
	sort.Strings(c.toolNames)
	c.session = s
	return nil
}

func (c *mcpConn) close() error {
	if c.session == nil {
		return nil
	}
	err := c.session.Close()
	if err != nil && strings.Contains(err.Error(), "signal: ") {
		return nil // a server killed at Close (or before) is what closing a command does
	}
	return err
}

// bind checks tool i of f against the server's tool list and returns its binding.
func (c *mcpConn) bind(f *taskfile.Task, i int) (tasks.Binding, error) {
	tl := &f.Tools[i]
	remote := tl.Remote
	if remote == "" {
		remote = tl.Name
	}
	path := fmt.Sprintf("tools[%d]", i)
	st, ok := c.tools[remote]
	if !ok {
		field := ".name"
		if tl.Remote != "" {
			field = ".remote"
		}
		return tasks.Binding{}, problem(path+field, "mcp server %s (%s %s) does not serve a tool %q (it serves: %s)",
			c.name, c.origin.Name, c.origin.Version, remote, strings.Join(c.toolNames, ", "))
	}
	served, err := json.Marshal(st.InputSchema)
	if err != nil {
		return tasks.Binding{}, problem(path, "the server's input schema of %s: %v", remote, err)
	}
	if len(tl.Arguments) > 0 {
		if mm := Mismatches(tl.Arguments, served); len(mm) > 0 {
			var ps []*taskfile.Problem
			for _, m := range mm {
				ps = append(ps, &taskfile.Problem{Path: path + ".arguments" + m.Path,
					Msg: fmt.Sprintf("contradicts the input schema of %s on mcp server %s: %s", remote, c.name, m.Msg)})
			}
			return tasks.Binding{}, &taskfile.Error{Problems: ps}
		}
	}
	origin := c.origin
	return tasks.Binding{
		Exec: func(ctx context.Context, _ *tasks.Instance, args json.RawMessage) (json.RawMessage, error) {
			return c.call(ctx, remote, args)
		},
		Origin: func() tasks.Origin { return origin },
		Schema: served,
	}, nil
}

// call calls a tool of the server. The output is the call's structured content when it has
// one, else the JSON its text holds, else {"text": ...}; a result marked as an error is the
// tool's error (the model is shown it); a server that does not answer is unavailable.
func (c *mcpConn) call(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error) {
	var a map[string]any
	if len(args) > 0 {
		if err := json.Unmarshal(args, &a); err != nil {
			return nil, fmt.Errorf("%w: arguments are not a JSON object: %v", tasks.ErrBadArguments, err)
		}
	}
	params := &mcp.CallToolParams{Name: tool, Arguments: a}
	if key := tasks.IdempotencyKey(ctx); key != "" {
		params.Meta = mcp.Meta{IdempotencyMetaKey: key}
	}
	res, err := c.session.CallTool(ctx, params)
	if err != nil {
		var we *jsonrpc.Error
		if errors.As(err, &we) && !errors.Is(err, mcp.ErrConnectionClosed) && ctx.Err() == nil {
			// The server answered, refusing the call (unknown tool, invalid params): the call's
			// failure, not the server's.
			return nil, fmt.Errorf("%s: %w", tool, err)
		}
		return nil, unavailable("mcp server "+c.name, err)
	}
	var texts []string
	allText := true
	for _, ct := range res.Content {
		if tc, ok := ct.(*mcp.TextContent); ok {
			texts = append(texts, tc.Text)
		} else {
			allText = false
		}
	}
	if res.IsError {
		return nil, fmt.Errorf("%s: %s", tool, cmpOr(textOf(texts), "the tool reported an error"))
	}
	if res.StructuredContent != nil {
		out, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return nil, fmt.Errorf("%s: structured content: %w", tool, err)
		}
		return out, nil
	}
	if allText && len(texts) == 1 && json.Valid([]byte(texts[0])) {
		return json.RawMessage(texts[0]), nil
	}
	if allText {
		return json.Marshal(map[string]string{"text": textOf(texts)})
	}
	return json.Marshal(map[string]any{"content": res.Content})
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// headerTransport adds fixed headers to every request.
type headerTransport struct {
	base http.RoundTripper
	h    http.Header
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.h {
		r.Header[k] = v
	}
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	return base.RoundTrip(r)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
