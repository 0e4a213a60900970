package bus_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// moduleRoot is the repository's root, from this package's directory.
const moduleRoot = "../.."

// connStateMethods are what other packages may ask of (*Bus).Conn(): the connection's state,
// and closing it. Anything else (publishing, requests, a JetStream context made on it) would
// bypass the bus.
var connStateMethods = []string{"IsConnected", "IsClosed", "IsReconnecting", "Status", "ConnectedUrl", "Stats", "Close"}

// nonTestGoFiles returns the module's Go files that are not tests, outside internal/bus (which
// owns NATS, its test helpers in bustest included), parsed.
func nonTestGoFiles(t *testing.T) map[string]*ast.File {
	t.Helper()
	files := map[string]*ast.File{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(moduleRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(moduleRoot, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "internal/bus" || rel == "testdata" || strings.HasSuffix(rel, "/testdata") ||
				(rel != "." && strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files[rel] = f
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 50 {
		t.Fatalf("found %d Go files under %s: the walk is broken", len(files), moduleRoot)
	}
	return files
}

// importName returns the name under which f imports the package at path (called pkg), or "".
func importName(f *ast.File, path, pkg string) string {
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == path {
			if imp.Name != nil {
				return imp.Name.Name
			}
			return pkg
		}
	}
	return ""
}

// busBypasses returns, for one file, every place that reaches NATS around the bus: a JetStream
// context made (jetstream.New…, or nats.go's legacy Conn.JetStream), a NATS connection of its
// own, a JetStream API subject, or the bus's connection used for anything but its state.
func busBypasses(f *ast.File) []ast.Node {
	js := importName(f, "github.com/nats-io/nats.go/jetstream", "jetstream")
	nats := importName(f, "github.com/nats-io/nats.go", "nats")
	allowed := map[ast.Node]bool{} // the Conn() calls whose only use is connStateMethods
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok && slices.Contains(connStateMethods, sel.Sel.Name) {
			allowed[sel.X] = true
		}
		return true
	})
	var bad []ast.Node
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok {
				if js != "" && x.Name == js && strings.HasPrefix(n.Sel.Name, "New") ||
					nats != "" && x.Name == nats && (n.Sel.Name == "Connect" || n.Sel.Name == "NewConn") {
					bad = append(bad, n)
				}
			}
		case *ast.CallExpr:
			sel, ok := n.Fun.(*ast.SelectorExpr)
			if !ok || len(n.Args) != 0 {
				break
			}
			if sel.Sel.Name == "JetStream" || sel.Sel.Name == "Conn" && !allowed[n] {
				bad = append(bad, n)
			}
		case *ast.BasicLit:
			if n.Kind == token.STRING && strings.Contains(n.Value, "$JS.") {
				bad = append(bad, n)
			}
		}
		return true
	})
	return bad
}

// TestOnlyBusReachesJetStream: no package but bus creates a stream or a consumer or publishes
// to JetStream. The bus hands out no JetStream context, so doing any of these elsewhere would
// need one made on a connection: the test fails on every way to make one, and on any use of
// the bus's connection beyond its state.
func TestOnlyBusReachesJetStream(t *testing.T) {
	for path, f := range nonTestGoFiles(t) {
		for _, n := range busBypasses(f) {
			t.Errorf("%s: %s reaches NATS around internal/bus", path, render(n))
		}
	}
}

// TestBusBypassesFound checks the checker on code that does each forbidden thing.
func TestBusBypassesFound(t *testing.T) {
	const src = `package x

import (
	"github.com/nats-io/nats.go"
	js2 "github.com/nats-io/nats.go/jetstream"
)

func f(b interface{ Conn() *nats.Conn }) {
	j, _ := js2.New(b.Conn())
	nc, _ := nats.Connect("nats://x")
	_ = nc.JetStream
	legacy, _ := nc.JetStream()
	_ = b.Conn().Publish("ditto.events.a.b.c", nil)
	_, _ = b.Conn().Request("$JS.API.STREAM.CREATE.X", nil, 0)
	ok := b.Conn().IsConnected() // allowed
	_, _, _ = j, legacy, ok
}
`
	f, err := parser.ParseFile(token.NewFileSet(), "x.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range busBypasses(f) {
		got = append(got, render(n))
	}
	want := []string{"js2.New", "b.Conn()", "nats.Connect", "nc.JetStream()", "b.Conn()", "b.Conn()", `"$JS.API.STREAM.CREATE.X"`}
	if !slices.Equal(got, want) {
		t.Errorf("busBypasses() = %q, want %q", got, want)
	}
}

// spelledOnce are the names of streams, subjects and durable consumers: a Go string literal
// holding one (or a subject under one of the prefixes) appears only in events/subjects.go.
var spelledOnce = []string{"DITTO_EVENTS", "DITTO_JOBS", "DITTO_REJECTED_JOBS", "ditto-workers", "ditto-analyzer",
	"ditto.events", "ditto.jobs", "ditto.rejected"}

// TestNamesSpelledOnce: outside tests, the names of streams, subjects and durable consumers
// are spelled only in events/subjects.go.
func TestNamesSpelledOnce(t *testing.T) {
	for path, f := range nonTestGoFiles(t) {
		if path == "events/subjects.go" {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			for _, name := range spelledOnce {
				if s == name || strings.HasPrefix(s, name+".") {
					t.Errorf("%s: %s spells %s; use the constant in events/subjects.go", path, lit.Value, name)
				}
			}
			return true
		})
	}
}

// render prints a node of a parsed file as source.
func render(n ast.Node) string {
	switch n := n.(type) {
	case *ast.Ident:
		return n.Name
	case *ast.BasicLit:
		return n.Value
	case *ast.SelectorExpr:
		return render(n.X) + "." + n.Sel.Name
	case *ast.CallExpr:
		return render(n.Fun) + "()"
	}
	return "?"
}
