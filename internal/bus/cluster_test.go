package bus_test

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/nats-io/nats-server/v2/server"
)

// startCluster runs a 3-node JetStream cluster in this process: unique names and stores,
// fixed loopback route ports outside the ephemeral range, random client ports.
func startCluster(t *testing.T) []*server.Server {
	t.Helper()
	const base = 16431
	var routes []*url.URL
	for i := 0; i < 3; i++ {
		routes = append(routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", base+i)})
	}
	var servers []*server.Server
	for i := 0; i < 3; i++ {
		opts := &server.Options{
			ServerName: fmt.Sprintf("n%d", i+1), Host: "127.0.0.1", Port: -1,
			JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true,
			Cluster: server.ClusterOpts{Name: "ditto-test", Host: "127.0.0.1", Port: base + i},
			Routes:  routes,
		}
		s, err := server.NewServer(opts)
		if err != nil {
			t.Fatal(err)
		}
		go s.Start()
		t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
		servers = append(servers, s)
	}
	for _, s := range servers {
		if !s.ReadyForConnections(10 * time.Second) {
			t.Fatalf("%s did not start", s.Name())
		}
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		for _, s := range servers {
			if s.JetStreamIsLeader() {
				return servers
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the cluster elected no JetStream meta leader")
		}
	}
}

// A process started without --replicas 3 against a cluster whose streams are R3 must not
// scale them down.
func TestEnsureStreamsNeverLowersReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	servers := startCluster(t)
	ctx := ctxT(t)
	open := func(replicas int) *bus.Bus {
		t.Helper()
		var last error
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			actx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			b, err := bus.Open(actx, bus.Config{URL: servers[0].ClientURL(), Replicas: replicas})
			if err != nil {
				cancel()
				last = err
				continue
			}
			last = b.EnsureStreams(actx) // may fail while the cluster settles
			cancel()
			if last == nil {
				t.Cleanup(func() { _ = b.Close() })
				return b
			}
			_ = b.Close()
		}
		t.Fatalf("EnsureStreams with replicas %d: %v", replicas, last)
		return nil
	}
	r3 := open(3)
	open(1) // a process without --replicas 3
	for _, name := range []string{events.EventsStream, events.JobsStream} {
		s, err := r3.JetStream().Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.CachedInfo().Config.Replicas; got != 3 {
			t.Errorf("%s replicas = %d after a process asked for 1, want 3", name, got)
		}
	}
}
