package bustest

import (
	"io"
	"net"
	"strings"
	"sync"
	"testing"
)

// Proxy is a loopback TCP proxy in front of a server. Hold stops what the server sends from
// reaching the clients (publishes are stored, their acknowledgements do not arrive) and Cut
// drops every connection (the clients reconnect through the proxy): together they put
// publishes in flight when a connection breaks, which a stopped server cannot do reliably (it
// may acknowledge them first). It is closed when the test ends.
type Proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	conns []net.Conn
	held  chan struct{} // non-nil while held; closed to release
}

// NewProxy starts a proxy to the server at target (host:port, or a nats:// URL).
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("bustest: proxy: %v", err)
	}
	p := &Proxy{ln: ln, target: strings.TrimPrefix(target, "nats://")}
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// URL is the proxy's client URL.
func (p *Proxy) URL() string { return "nats://" + p.ln.Addr().String() }

// Hold stops forwarding from the server to the clients until Cut.
func (p *Proxy) Hold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held == nil {
		p.held = make(chan struct{})
	}
}

// Cut closes every connection through the proxy, discarding what Hold kept back, and forwards
// freely again.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
	if p.held != nil {
		close(p.held)
		p.held = nil
	}
}

func (p *Proxy) close() {
	p.ln.Close()
	p.Cut()
}

func (p *Proxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, client, server)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(server, client); server.Close() }()
		go p.toClient(client, server)
	}
}

// toClient copies from the server to the client, waiting while held.
func (p *Proxy) toClient(client, server net.Conn) {
	defer client.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := server.Read(buf)
		if n > 0 {
			p.mu.Lock()
			held := p.held
			p.mu.Unlock()
			if held != nil {
				<-held
				return // Cut: the connection is gone, and what was held with it
			}
			if _, werr := client.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
