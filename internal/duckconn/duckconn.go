// Package duckconn wraps the DuckDB driver's connections so that closing one lets its database
// close too.
//
// DuckDB (1.5, through duckdb-go v2.10506.0) keeps a connection's client context alive after
// the connection is closed when the connection's last query was made pending and never
// executed: the driver does that when the query's context ends between the two steps
// (Stmt.executeBound checks ctx.Err() after duckdb_pending_prepared and destroys the pending
// result). The context keeps the database instance alive, with its files open, after the
// connector is closed, and DuckDB's instance cache then spins without end in the next open of
// the same file in the process (DBInstanceCache::GetInstanceInternal waits for the old
// instance to go). Any statement run on the connection first ends the abandoned query, so
// Conn.Close runs one before it closes.
package duckconn

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"reflect"
	"unsafe"

	bindings "github.com/duckdb/duckdb-go-bindings"
	"github.com/duckdb/duckdb-go/v2"
)

// Connector makes the connections of a DuckDB connector as Conns. Closing it closes the
// DuckDB connector.
type Connector struct {
	*duckdb.Connector
}

// New opens a DuckDB database as duckdb.NewConnector does (dsn is the file, with options as
// URL parameters) and returns its Connector. Each new connection runs the init statements
// first, in order (a temporary view, say, which only its connection sees).
func New(dsn string, init ...string) (*Connector, error) {
	var fn func(driver.ExecerContext) error
	if len(init) > 0 {
		fn = func(e driver.ExecerContext) error {
			for _, s := range init {
				if _, err := e.ExecContext(context.Background(), s, nil); err != nil {
					return fmt.Errorf("duckconn: connection init: %w", err)
				}
			}
			return nil
		}
	}
	c, err := duckdb.NewConnector(dsn, fn)
	if err != nil {
		return nil, err
	}
	return &Connector{Connector: c}, nil
}

// With opens dsn on a connector of its own, gives f a database of its connections, and closes
// them before it returns (to read a file's catalog, say, before opening it as it needs).
func With(dsn string, f func(db *sql.DB) error) error {
	c, err := New(dsn)
	if err != nil {
		return err
	}
	db := sql.OpenDB(c)
	err = f(db)
	return errors.Join(err, db.Close(), c.Close())
}

// Connect returns a new connection.
func (c *Connector) Connect(ctx context.Context) (driver.Conn, error) {
	dc, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	d, ok := dc.(*duckdb.Conn)
	if !ok {
		_ = dc.Close()
		return nil, fmt.Errorf("duckconn: the DuckDB driver returned a %T, not a *duckdb.Conn", dc)
	}
	return &Conn{Conn: d}, nil
}

// Conn is one of DuckDB's connections (every method of the driver's is promoted) whose Close
// first ends a query the driver may have left pending. The driver's functions that take a
// driver connection and assert *duckdb.Conn (the Arrow interface, the appenders, ConnId, the
// UDF registrations) must be given Driver(dc).
type Conn struct {
	*duckdb.Conn
}

// settle is the statement Close runs: beginning it ends the query left pending, if any.
const settle = "SELECT 1"

// Close ends whatever query the connection has pending (see the package doc) and closes it.
func (c *Conn) Close() error {
	// The statement's own error (a transaction left aborted refuses it) does not matter:
	// DuckDB cleaned up the abandoned query when the statement began.
	_, _ = c.Conn.ExecContext(context.Background(), settle, nil)
	return c.Conn.Close()
}

// Unwrap returns the driver's own connection, for what needs its type (the Arrow interface,
// the appenders).
func (c *Conn) Unwrap() driver.Conn { return c.Conn }

// Driver returns DuckDB's connection behind dc (a driver connection Conn.Raw gave, wrapped
// any number of times by types with an Unwrap() driver.Conn method), or nil when there is none.
func Driver(dc any) *duckdb.Conn {
	for {
		switch c := dc.(type) {
		case *duckdb.Conn:
			return c
		case interface{ Unwrap() driver.Conn }:
			dc = c.Unwrap()
		default:
			return nil
		}
	}
}

// Handle returns the C connection handle inside the DuckDB connection behind dc, for the
// parts of DuckDB's C API the driver does not expose. The driver keeps it in an unexported
// field; a driver upgrade that moves it makes this an error (and every test that streams a
// query fails with it).
func Handle(dc any) (bindings.Connection, error) {
	c := Driver(dc)
	if c == nil {
		return bindings.Connection{}, fmt.Errorf("duckconn: %T is not a DuckDB connection", dc)
	}
	f := reflect.ValueOf(c).Elem().FieldByName("conn")
	if !f.IsValid() || f.Type() != reflect.TypeFor[bindings.Connection]() {
		return bindings.Connection{}, errors.New("duckconn: the DuckDB driver no longer holds its C connection in field conn (driver upgraded?)")
	}
	h := reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Interface().(bindings.Connection)
	if h.Ptr == nil {
		return bindings.Connection{}, errors.New("duckconn: the DuckDB connection is closed")
	}
	return h, nil
}
