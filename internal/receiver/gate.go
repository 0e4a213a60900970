package receiver

import (
	"context"
	"sync"
	"time"
)

// gate bounds the events published and not yet acknowledged, server-wide. A request takes
// room for all of its events before publishing any, so it is admitted whole or not at all,
// and gives the room back only after JetStream acknowledged (or failed) every one of them.
type gate struct {
	mu      sync.Mutex
	used    int
	limit   int
	changed chan struct{} // closed and replaced whenever room is given back
}

func newGate(limit int) *gate { return &gate{limit: limit, changed: make(chan struct{})} }

// acquire takes n units, waiting at most wait (and never past ctx) for room. It reports
// whether it got them. n above the limit never fits.
func (g *gate) acquire(ctx context.Context, n int, wait time.Duration) bool {
	if n > g.limit {
		return false
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		g.mu.Lock()
		if g.used+n <= g.limit {
			g.used += n
			g.mu.Unlock()
			return true
		}
		ch := g.changed
		g.mu.Unlock()
		select {
		case <-ch:
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

func (g *gate) release(n int) {
	g.mu.Lock()
	g.used -= n
	close(g.changed)
	g.changed = make(chan struct{})
	g.mu.Unlock()
}

// full reports whether no room is left at all (used for a cheap early refusal).
func (g *gate) full() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.used >= g.limit
}

func (g *gate) inUse() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.used
}
