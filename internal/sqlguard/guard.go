package sqlguard

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Config bounds the queries a Guard runs. Zero fields take the defaults.
type Config struct {
	Timeout    time.Duration // default timeout of a query; default 30s
	MaxTimeout time.Duration // the most a caller may ask for; default 5m
	MaxRows    int           // default row limit; default 10,000
	RowsCap    int           // the most rows a caller may ask for; default 1,000,000
	// MaxConcurrent bounds the queries running at once (each already uses all of DuckDB's
	// threads; more would only share them and crowd out ingestion); default 4. A query waits
	// for a slot within its own timeout.
	MaxConcurrent int
}

// Defaults for Config.
const (
	DefaultTimeout    = 30 * time.Second
	DefaultMaxTimeout = 5 * time.Minute
	DefaultMaxRows    = 10_000
	DefaultRowsCap    = 1_000_000
	DefaultConcurrent = 4
)

func (c Config) withDefaults() Config {
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxTimeout == 0 {
		c.MaxTimeout = DefaultMaxTimeout
	}
	if c.MaxRows == 0 {
		c.MaxRows = DefaultMaxRows
	}
	if c.RowsCap == 0 {
		c.RowsCap = DefaultRowsCap
	}
	if c.MaxConcurrent == 0 {
		c.MaxConcurrent = DefaultConcurrent
	}
	return c
}

// Validate reports the first invalid setting.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Timeout < 0 || c.MaxTimeout < 0:
		return fmt.Errorf("%w: negative timeout", ErrConfig)
	case c.Timeout > c.MaxTimeout:
		return fmt.Errorf("%w: timeout %v above max timeout %v", ErrConfig, c.Timeout, c.MaxTimeout)
	case c.MaxRows < 0 || c.RowsCap < 0:
		return fmt.Errorf("%w: negative row limit", ErrConfig)
	case c.MaxRows > c.RowsCap:
		return fmt.Errorf("%w: row limit %d above rows cap %d", ErrConfig, c.MaxRows, c.RowsCap)
	case c.MaxConcurrent < 0:
		return fmt.Errorf("%w: negative max concurrent", ErrConfig)
	}
	return nil
}

// Guard runs user queries against one DuckDB database. It is safe for concurrent use; each
// query takes its own connection from db's pool for its duration.
type Guard struct {
	db    *sql.DB
	cfg   Config
	slots chan struct{} // one token per running query
}

// New returns a Guard over db. It does not harden db; see Harden.
func New(db *sql.DB, cfg Config) (*Guard, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	return &Guard{db: db, cfg: cfg, slots: make(chan struct{}, cfg.MaxConcurrent)}, nil
}

// Limits are a caller's per-query bounds; zero fields take the Guard's defaults and values
// above the Guard's maxima are lowered to them.
type Limits struct {
	Rows    int
	Timeout time.Duration
}

func (g *Guard) limits(l Limits) Limits {
	if l.Rows <= 0 {
		l.Rows = g.cfg.MaxRows
	}
	l.Rows = min(l.Rows, g.cfg.RowsCap)
	if l.Timeout <= 0 {
		l.Timeout = g.cfg.Timeout
	}
	l.Timeout = min(l.Timeout, g.cfg.MaxTimeout)
	return l
}

// Query checks query (see Check) and runs it within limits in a read-only transaction that is
// rolled back. args bind the query's parameters ($1, $2, … or ?), as values, never as SQL. Errors: *RefusedError (ErrRefused), ErrEmpty, ErrTimeout also wrapping
// context.DeadlineExceeded, ctx's own error, or ErrQuery wrapping DuckDB's error.
func (g *Guard) Query(ctx context.Context, query string, lim Limits, args ...any) (*Result, error) {
	lim = g.limits(lim)
	start := time.Now()
	qctx, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()

	select {
	case g.slots <- struct{}{}:
		defer func() { <-g.slots }()
	case <-qctx.Done():
		return nil, g.classify(ctx, qctx, lim, fmt.Errorf("sqlguard: waiting for a query slot: %w", qctx.Err()))
	}

	conn, err := g.db.Conn(qctx)
	if err != nil {
		return nil, g.classify(ctx, qctx, lim, fmt.Errorf("sqlguard: connection: %w", err))
	}
	defer conn.Close()

	if err := Check(qctx, conn, query); err != nil {
		return nil, g.classify(ctx, qctx, lim, err)
	}
	text, wrapped := wrap(query, lim.Rows+1)
	if wrapped {
		// The wrapped text is what runs, so it is what must pass; if it does not parse as one
		// SELECT (a trailing comment swallowed the parenthesis, say), run the original.
		if Check(qctx, conn, text) != nil {
			text, wrapped = query, false
		}
	}

	if _, err := conn.ExecContext(qctx, "BEGIN TRANSACTION READ ONLY"); err != nil {
		return nil, g.classify(ctx, qctx, lim, fmt.Errorf("sqlguard: begin: %w", err))
	}
	res, err := scan(qctx, conn, text, lim.Rows, args)
	rollback(conn)
	if err != nil {
		return nil, g.classify(ctx, qctx, lim, err)
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// Running returns the number of queries running (holding a slot) now.
func (g *Guard) Running() int { return len(g.slots) }

// classify turns a failure into the documented error classes.
func (g *Guard) classify(ctx, qctx context.Context, lim Limits, err error) error {
	if ctx.Err() == nil && errors.Is(qctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w after %v: %w", ErrTimeout, lim.Timeout, context.DeadlineExceeded)
	}
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("sqlguard: %w", cerr)
	}
	return err
}

// rollback ends the read-only transaction. A connection that cannot roll back (interrupted
// mid-statement, say) is discarded from the pool rather than reused in an unknown state.
func rollback(conn *sql.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	}
}

// wrap returns query bounded to n rows by DuckDB itself, and whether it could wrap it.
func wrap(query string, n int) (string, bool) {
	q := strings.TrimSpace(query)
	for strings.HasSuffix(q, ";") {
		q = strings.TrimSpace(strings.TrimSuffix(q, ";"))
	}
	if q == "" {
		return query, false
	}
	// The newlines keep a trailing line comment from swallowing the closing parenthesis.
	return "SELECT * FROM (\n" + q + "\n) AS ditto_guarded LIMIT " + strconv.Itoa(n), true
}
