package warehouse_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/samples"
	"github.com/dittolab/ditto/internal/warehouse"
)

func ctxT(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// msg is one message to publish: a subject, a msg id and the body.
type msg struct {
	subject, id string
	data        []byte
}

// sampleMsgs returns the bundled production traces as messages.
func sampleMsgs(t testing.TB) []msg {
	t.Helper()
	var out []msg
	for _, line := range bytes.Split(bytes.TrimSpace(samples.Traces), []byte("\n")) {
		e, err := events.Decode(line)
		if err != nil {
			t.Fatalf("sample: %v", err)
		}
		subj, _ := events.SubjectOf(&e)
		out = append(out, msg{subj, e.ID, append([]byte(nil), line...)})
	}
	return out
}

func envMsg(t testing.TB, e *events.Envelope) msg {
	t.Helper()
	b, err := events.Encode(e)
	if err != nil {
		t.Fatalf("encode %s: %v", e.Type, err)
	}
	subj, _ := events.SubjectOf(e)
	return msg{subj, e.ID, b}
}

// publish publishes msgs in order and waits for every ack.
func publish(t testing.TB, b *bus.Bus, msgs []msg) {
	t.Helper()
	ctx := ctxT(t, 60*time.Second)
	p, err := b.NewPublisher(bus.WithMaxInFlight(1)) // in order
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if err := p.Publish(ctx, m.subject, m.id, m.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}

// publishFast publishes msgs with many in flight (arrival order may differ from msgs order).
func publishFast(t testing.TB, b *bus.Bus, msgs []msg) {
	t.Helper()
	ctx := ctxT(t, 120*time.Second)
	p, err := b.NewPublisher()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if err := p.Publish(ctx, m.subject, m.id, m.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}

func openWH(t testing.TB, path string) *warehouse.Warehouse {
	t.Helper()
	w, err := warehouse.Open(ctxT(t, 30*time.Second), warehouse.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return w
}

func tempDB(t testing.TB) string { return filepath.Join(t.TempDir(), "ditto.duckdb") }

func count(t testing.TB, db *sql.DB, q string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// dump returns a table's content as sorted text lines, for comparisons.
func dump(t testing.TB, db *sql.DB, table string) []string {
	t.Helper()
	rows, err := db.Query("SELECT * FROM " + table)
	if err != nil {
		t.Fatalf("dump %s: %v", table, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		var sb strings.Builder
		for i, v := range vals {
			if i > 0 {
				sb.WriteString(" | ")
			}
			fmt.Fprintf(&sb, "%s=%v", cols[i], fmtVal(v))
		}
		out = append(out, sb.String())
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func fmtVal(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case []byte:
		return fmt.Sprintf("%q", x)
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case float64:
		return fmt.Sprintf("%.6g", x)
	}
	return fmt.Sprint(v)
}
