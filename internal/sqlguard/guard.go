package sqlguard

import (
	"bytes"
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
	// MaxBytes is the default byte limit of an answer and BytesCap the most a caller may ask
	// for; defaults 64 MiB and 1 GiB. The guard hands the limit to whoever encodes the answer
	// (Rows.ByteLimit), since only the encoder knows its size; Query counts Arrow bytes.
	MaxBytes int64
	BytesCap int64
	// MaxConcurrent bounds the queries running at once (each already uses all of DuckDB's
	// threads; more would only share them and crowd out ingestion); default 4. A query waits
	// for a slot within its own timeout. When MaxConcurrent is 2 or more, one slot is kept for
	// short queries (a timeout no longer than Timeout): long ones take at most
	// MaxConcurrent-1, so that a few slow clients cannot shut everyone out.
	MaxConcurrent int
}

// Defaults for Config.
const (
	DefaultTimeout    = 30 * time.Second
	DefaultMaxTimeout = 5 * time.Minute
	DefaultMaxRows    = 10_000
	DefaultRowsCap    = 1_000_000
	DefaultMaxBytes   = 64 << 20
	DefaultBytesCap   = 1 << 30
	DefaultConcurrent = 4
)

func (c Config) withDefaults() Config {
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxTimeout == 0 {
		c.MaxTimeout = max(DefaultMaxTimeout, c.Timeout)
	}
	if c.MaxRows == 0 {
		c.MaxRows = min(DefaultMaxRows, max(c.RowsCap, 0))
		if c.RowsCap == 0 {
			c.MaxRows = DefaultMaxRows
		}
	}
	if c.RowsCap == 0 {
		c.RowsCap = max(DefaultRowsCap, c.MaxRows)
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = DefaultMaxBytes
		if c.BytesCap > 0 {
			c.MaxBytes = min(DefaultMaxBytes, c.BytesCap)
		}
	}
	if c.BytesCap == 0 {
		c.BytesCap = max(DefaultBytesCap, c.MaxBytes)
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
	case c.MaxBytes < 0 || c.BytesCap < 0:
		return fmt.Errorf("%w: negative byte limit", ErrConfig)
	case c.MaxBytes > c.BytesCap:
		return fmt.Errorf("%w: byte limit %d above bytes cap %d", ErrConfig, c.MaxBytes, c.BytesCap)
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
	long  chan struct{} // one token per running long query (timeout above cfg.Timeout)
}

// New returns a Guard over db. It does not harden db; see Harden.
func New(db *sql.DB, cfg Config) (*Guard, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	return &Guard{db: db, cfg: cfg,
		slots: make(chan struct{}, cfg.MaxConcurrent),
		long:  make(chan struct{}, max(cfg.MaxConcurrent-1, 1)),
	}, nil
}

// Limits are a caller's per-query bounds; zero fields take the Guard's defaults and values
// above the Guard's maxima are lowered to them.
type Limits struct {
	Rows    int
	Bytes   int64
	Timeout time.Duration
}

func (g *Guard) limits(l Limits) Limits {
	if l.Rows <= 0 {
		l.Rows = g.cfg.MaxRows
	}
	l.Rows = min(l.Rows, g.cfg.RowsCap)
	if l.Bytes <= 0 {
		l.Bytes = g.cfg.MaxBytes
	}
	l.Bytes = min(l.Bytes, g.cfg.BytesCap)
	if l.Timeout <= 0 {
		l.Timeout = g.cfg.Timeout
	}
	l.Timeout = min(l.Timeout, g.cfg.MaxTimeout)
	return l
}

// Stream checks query (see Check) and starts it within limits in a read-only transaction, as a
// streaming answer read with Rows.Next; the caller must Close it. args bind the query's
// parameters ($1, $2, … or ?), as values, never as SQL: nil, string, bool, int, int64 or
// float64. Errors: *RefusedError (ErrRefused), ErrEmpty, ErrTimeout also wrapping
// context.DeadlineExceeded, ctx's own error, ErrQuery wrapping DuckDB's error, or ErrNoArrow.
//
// The row limit holds for every statement that runs: Rows stops at it whatever the text
// (DuckDB is also asked for one row more than the limit when the query can be wrapped, so it
// can stop early: a top-n instead of a full sort).
func (g *Guard) Stream(ctx context.Context, query string, lim Limits, args ...any) (_ *Rows, err error) {
	lim = g.limits(lim)
	r := &Rows{limit: lim.Rows, bytes: lim.Bytes, start: time.Now(), ctx: ctx, timeout: lim.Timeout}
	qctx, cancel := context.WithTimeout(ctx, lim.Timeout)
	r.qctx = qctx
	var cleanup []func()
	r.release = func() {
		for i := len(cleanup) - 1; i >= 0; i-- {
			cleanup[i]()
		}
		cancel()
	}
	defer func() {
		if err != nil {
			r.Close()
		}
	}()

	if err := g.acquire(qctx, lim.Timeout, &cleanup); err != nil {
		return nil, g.classify(ctx, qctx, lim, err)
	}
	conn, err := g.db.Conn(qctx)
	if err != nil {
		return nil, g.classify(ctx, qctx, lim, fmt.Errorf("sqlguard: connection: %w", err))
	}
	cleanup = append(cleanup, func() { conn.Close() })

	if err := Check(qctx, conn, query); err != nil {
		return nil, g.classify(ctx, qctx, lim, err)
	}
	text, wrapped := wrap(query, lim.Rows+1)
	if wrapped {
		// The wrapped text is what runs, so it is what must pass; if it does not parse as one
		// SELECT (a trailing comment swallowed the parenthesis, say), run the original: Rows
		// applies the limit either way.
		if Check(qctx, conn, text) != nil {
			text = query
		}
	}

	if _, err := conn.ExecContext(qctx, "BEGIN TRANSACTION READ ONLY"); err != nil {
		return nil, g.classify(ctx, qctx, lim, fmt.Errorf("sqlguard: begin: %w", err))
	}
	cleanup = append(cleanup, func() { rollback(conn) })
	err = conn.Raw(func(dc any) error {
		var err error
		r.src, r.Columns, r.schema, err = openStream(qctx, dc, text, args)
		return err
	})
	if err != nil {
		if errors.Is(err, ErrNoArrow) {
			return nil, err
		}
		return nil, g.classify(ctx, qctx, lim, fmt.Errorf("%w: %w", ErrQuery, err))
	}
	return r, nil
}

// acquire takes a slot (and, for a long query, a long-query token) within ctx, adding their
// release to cleanup.
func (g *Guard) acquire(ctx context.Context, timeout time.Duration, cleanup *[]func()) error {
	if timeout > g.cfg.Timeout && g.cfg.MaxConcurrent > 1 {
		select {
		case g.long <- struct{}{}:
			*cleanup = append(*cleanup, func() { <-g.long })
		case <-ctx.Done():
			return fmt.Errorf("sqlguard: waiting for a slot for long queries: %w", ctx.Err())
		}
	}
	select {
	case g.slots <- struct{}{}:
		*cleanup = append(*cleanup, func() { <-g.slots })
		return nil
	case <-ctx.Done():
		return fmt.Errorf("sqlguard: waiting for a query slot: %w", ctx.Err())
	}
}

// Query runs query as Stream does and reads the whole answer, for callers that want rows of
// Go values (arrow-go's GetOneForMarshal values: int64, string, float64, bool, nil, … and
// json.RawMessage for nested values). It stops at the row limit and at the byte limit counted
// in Arrow bytes (Result.Truncated).
func (g *Guard) Query(ctx context.Context, query string, lim Limits, args ...any) (*Result, error) {
	rows, err := g.Stream(ctx, query, lim, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	res := &Result{Columns: rows.Columns}
	var size int64
	for rec := rows.Next(); rec != nil; rec = rows.Next() {
		size += RecordBytes(rec)
		for i := range int(rec.NumRows()) {
			row := make([]any, rec.NumCols())
			for j, col := range rec.Columns() {
				row[j] = ownValue(col.GetOneForMarshal(i))
			}
			res.Rows = append(res.Rows, row)
		}
		rec.Release()
		if size > rows.ByteLimit() {
			res.Truncated = true
			break
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	res.Truncated = res.Truncated || rows.Truncated()
	res.Elapsed = rows.Elapsed()
	return res, nil
}

// ownValue copies strings and bytes out of an Arrow buffer, which is freed with its batch.
func ownValue(v any) any {
	switch x := v.(type) {
	case string:
		return strings.Clone(x)
	case []byte:
		return bytes.Clone(x)
	}
	return v
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
