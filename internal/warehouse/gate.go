package warehouse

import (
	"context"
	"database/sql/driver"
	"sync"
	"time"

	"github.com/dittolab/ditto/internal/duckconn"
)

// The gate keeps the warehouse's other users out of a reattach (reattach.go). Between the
// DETACH and the ATTACH, a query on another connection finds no catalog, and a transaction
// begun before the DETACH holds the detached database open, so that the ATTACH must wait for
// it. `analyzer serve` answers its query API, console, metrics and reports from the same
// database while it ingests: the reattach may begin only when no connection but the
// ingester's is taken from the pool, and a connection asked for while it runs waits for it
// (tens of milliseconds; up to attachWait if something the gate does not count holds the
// database, after which the gate opens on a database still detached, whose users then get
// DuckDB's error until ingestion attaches it again).
//
// database/sql tells the driver when a connection is taken from the pool and when it is put
// back: a connection is made for a user who asked (Connector.Connect) or reset for the next one
// (driver.SessionResetter, before a used connection serves again), and checked
// (driver.Validator) each time it goes back. So the gate counts connections out of the pool,
// not statements: a *sql.Conn held open (an export, a guarded query streaming its rows through
// Arrow on the raw connection, a transaction begun by an Exec of BEGIN) counts from the moment
// it is taken until it is closed, whatever it runs on the raw connection meanwhile.
//
// The ingester's connections are taken with a context marked by exemptFromGate: they do not
// count, and do not wait, since the ingester is the one that closes the gate.

// gate counts the connections out of the pool and holds new ones back while closed.
type gate struct {
	mu     sync.Mutex
	out    int           // connections taken from the pool and not put back, the exempt ones aside
	closed bool          // a reattach is under way
	opened chan struct{} // closed when the gate opens again
	idle   chan struct{} // when not nil, closed (and set to nil) when out falls to 0
}

func newGate() *gate { return &gate{} }

// take counts a connection taken from the pool, waiting while the gate is closed.
func (g *gate) take(ctx context.Context) error {
	g.mu.Lock()
	for g.closed {
		opened := g.opened
		g.mu.Unlock()
		select {
		case <-opened:
		case <-ctx.Done():
			return ctx.Err()
		}
		g.mu.Lock()
	}
	g.out++
	g.mu.Unlock()
	return nil
}

// giveBack counts a connection put back in the pool (or closed).
func (g *gate) giveBack() {
	g.mu.Lock()
	g.out--
	if g.out == 0 && g.idle != nil {
		close(g.idle)
		g.idle = nil
	}
	g.mu.Unlock()
}

// tryClose closes the gate once no counted connection is out of the pool, waiting at most
// wait for that; it reports whether it closed it. While it waits, connections are still given
// out, unless firm: then the gate is closed to new connections at once, and opened again if
// those out are not all back within wait. So a reattach that finds the database busy is put
// off, and its users are not kept waiting, until it has been put off gateFirmAfter times.
func (g *gate) tryClose(ctx context.Context, wait time.Duration, firm bool) bool {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	g.mu.Lock()
	if firm {
		g.closed, g.opened = true, make(chan struct{})
	}
	for {
		if g.out == 0 {
			if !firm {
				g.closed, g.opened = true, make(chan struct{})
			}
			g.mu.Unlock()
			return true
		}
		if g.idle == nil {
			g.idle = make(chan struct{})
		}
		idle := g.idle
		g.mu.Unlock()
		select {
		case <-idle:
		case <-timer.C:
			g.openIf(firm)
			return false
		case <-ctx.Done():
			g.openIf(firm)
			return false
		}
		g.mu.Lock()
	}
}

func (g *gate) openIf(closedHere bool) {
	if closedHere {
		g.open()
	}
}

// open opens the gate that tryClose closed, letting the connections held back go.
func (g *gate) open() {
	g.mu.Lock()
	if g.closed {
		g.closed = false
		close(g.opened)
	}
	g.mu.Unlock()
}

// outOfPool is the count of connections out of the pool, the exempt ones aside (for tests).
func (g *gate) outOfPool() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.out
}

type exemptKey struct{}

// exemptFromGate marks ctx for taking the ingester's connections: they are not counted and do
// not wait for the gate.
func exemptFromGate(ctx context.Context) context.Context {
	return context.WithValue(ctx, exemptKey{}, true)
}

func exempt(ctx context.Context) bool { v, _ := ctx.Value(exemptKey{}).(bool); return v }

// gatedConnector makes DuckDB's connections counted by the gate.
type gatedConnector struct {
	inner driver.Connector
	gate  *gate
}

// Connect makes a connection for a user who asked for one. (With SetMaxOpenConns, database/sql
// also opens connections ahead for users who wait, with a context of its own: such a
// connection is counted until it is first put back, and may wait at a closed gate. The
// warehouse's pool is not limited.)
func (c *gatedConnector) Connect(ctx context.Context) (driver.Conn, error) {
	ex := exempt(ctx)
	if !ex {
		if err := c.gate.take(ctx); err != nil {
			return nil, err
		}
	}
	conn, err := c.inner.Connect(ctx)
	if err != nil {
		if !ex {
			c.gate.giveBack()
		}
		return nil, err
	}
	return &gatedConn{Conn: conn, gate: c.gate, out: !ex}, nil
}

func (c *gatedConnector) Driver() driver.Driver { return c.inner.Driver() }

// gatedConn is one of DuckDB's connections, counted while out of the pool. out says whether it
// is counted now: it is when it was made or reset for a user who is not exempt, until it is
// put back (IsValid) or closed.
type gatedConn struct {
	driver.Conn
	gate     *gate
	out      bool
	txFailed bool // a transaction's Commit or Rollback failed (IsValid)
}

// Unwrap returns the connection it wraps (a duckconn.Conn): duckconn.Driver goes on to DuckDB's
// own, for what needs its type (the Arrow interface, the appenders).
func (c *gatedConn) Unwrap() driver.Conn { return c.Conn }

// unwrapConn returns DuckDB's connection behind dc, a driver connection Conn.Raw gave.
func unwrapConn(dc any) driver.Conn {
	if c := duckconn.Driver(dc); c != nil {
		return c
	}
	conn, _ := dc.(driver.Conn)
	return conn
}

// ResetSession is called before a used connection serves its next user. When the user's ctx
// ends while it waits at the closed gate, the connection is given up (driver.ErrBadConn):
// database/sql hands a connection out whatever else ResetSession returns, and it would be
// used uncounted; it then asks for a new one, which returns ctx's error.
func (c *gatedConn) ResetSession(ctx context.Context) error {
	if c.out || exempt(ctx) {
		return nil
	}
	if err := c.gate.take(ctx); err != nil {
		return driver.ErrBadConn
	}
	c.out = true
	return nil
}

// IsValid is called when the connection goes back to the pool. One whose transaction failed
// to end is not valid: it may still be inside it, holding the database (a reattach's ATTACH
// would wait for it) where the gate no longer counts it. (With SessionResetter and Validator
// implemented, database/sql puts a connection whose transaction's context ended back in the
// pool after the rollback, where it would otherwise close it.)
func (c *gatedConn) IsValid() bool {
	c.release()
	return !c.txFailed
}

func (c *gatedConn) release() {
	if c.out {
		c.out = false
		c.gate.giveBack()
	}
}

func (c *gatedConn) Close() error {
	c.release()
	return c.Conn.Close()
}

func (c *gatedConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &gatedTx{Tx: tx, conn: c}, nil
}

// gatedTx marks its connection when it fails to end (gatedConn.IsValid). database/sql calls
// Commit and Rollback under the connection's lock, as it does IsValid.
type gatedTx struct {
	driver.Tx
	conn *gatedConn
}

func (t *gatedTx) Commit() error { return t.conn.ended(t.Tx.Commit()) }

func (t *gatedTx) Rollback() error { return t.conn.ended(t.Tx.Rollback()) }

func (c *gatedConn) ended(err error) error {
	if err != nil {
		c.txFailed = true
	}
	return err
}

func (c *gatedConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
}

func (c *gatedConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	return c.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
}

func (c *gatedConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	return c.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
}

func (c *gatedConn) CheckNamedValue(nv *driver.NamedValue) error {
	return c.Conn.(driver.NamedValueChecker).CheckNamedValue(nv)
}

var (
	_ driver.Connector          = (*gatedConnector)(nil)
	_ driver.ConnBeginTx        = (*gatedConn)(nil)
	_ driver.ConnPrepareContext = (*gatedConn)(nil)
	_ driver.ExecerContext      = (*gatedConn)(nil)
	_ driver.QueryerContext     = (*gatedConn)(nil)
	_ driver.NamedValueChecker  = (*gatedConn)(nil)
	_ driver.SessionResetter    = (*gatedConn)(nil)
	_ driver.Validator          = (*gatedConn)(nil)
)
