package bustest

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/bus"
	"github.com/nats-io/nats-server/v2/server"
)

// Cluster is a 3-node JetStream cluster in this process, on loopback, with its stores in test
// temp dirs. It is shut down when the test ends.
type Cluster struct {
	Servers []*server.Server
}

// StartCluster starts the cluster and waits until it has elected a JetStream meta leader.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	var routes []*url.URL
	ports := make([]int, 3)
	for i := range ports {
		ports[i] = FreePort(t)
		routes = append(routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", ports[i])})
	}
	c := &Cluster{}
	for i, port := range ports {
		opts := &server.Options{
			ServerName: fmt.Sprintf("n%d", i+1), Host: "127.0.0.1", Port: -1,
			JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true,
			Cluster: server.ClusterOpts{Name: "ditto-test", Host: "127.0.0.1", Port: port},
			Routes:  routes,
		}
		s, err := server.NewServer(opts)
		if err != nil {
			t.Fatalf("bustest: cluster node %d: %v", i+1, err)
		}
		go s.Start()
		t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
		c.Servers = append(c.Servers, s)
	}
	for _, s := range c.Servers {
		if !s.ReadyForConnections(10 * time.Second) {
			t.Fatalf("bustest: cluster node %s did not start", s.Name())
		}
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		for _, s := range c.Servers {
			if s.JetStreamIsLeader() {
				return c
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("bustest: the cluster elected no JetStream meta leader")
		}
	}
}

// URL returns the client URLs of every node, as --nats-url takes them.
func (c *Cluster) URL() string {
	urls := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		urls[i] = s.ClientURL()
	}
	return strings.Join(urls, ",")
}

// Connect opens a bus asking for the given stream replicas and ensures the streams, trying
// again for up to 30 s while the cluster settles (it elects stream leaders for a while after
// it starts). The bus is closed when the test ends.
func (c *Cluster) Connect(t testing.TB, replicas int) *bus.Bus {
	t.Helper()
	var last error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		b, err := bus.OpenWithStreams(ctx, bus.Config{URL: c.URL(), Replicas: replicas, Name: t.Name()})
		cancel()
		if err == nil {
			t.Cleanup(func() { _ = b.Close() })
			return b
		}
		last = err
	}
	t.Fatalf("bustest: open the cluster with replicas %d: %v", replicas, last)
	return nil
}
