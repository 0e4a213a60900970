package bus_test

import (
	"testing"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/bus/bustest"
)

// clusterStreams are every stream EnsureStreams makes.
var clusterStreams = []string{events.EventsStream, events.JobsStream, events.RejectedJobsStream}

// checkReplicas fails the test unless each of ditto's streams has want replicas.
func checkReplicas(t *testing.T, b *bus.Bus, want int) {
	t.Helper()
	for _, name := range clusterStreams {
		s, err := b.Stream(ctxT(t), name)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.CachedInfo().Config.Replicas; got != want {
			t.Errorf("%s replicas = %d, want %d", name, got, want)
		}
	}
}

// A process started without --replicas 3 against a cluster whose streams are R3 must not
// scale them down.
func TestEnsureStreamsNeverLowersReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	c := bustest.StartCluster(t)
	r3 := c.Connect(t, 3)
	checkReplicas(t, r3, 3)
	c.Connect(t, 1) // a process without --replicas 3
	checkReplicas(t, r3, 3)
}
