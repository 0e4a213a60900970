package warehouse

import (
	"context"
	"errors"
	"testing"
	"time"
)

// The gate's own rules: a connection asked for while it is closed waits until it opens or its
// context ends; it closes only with no connection out, and a firm close holds new ones back
// while it waits and lets them go when it gives up.
func TestGateRules(t *testing.T) {
	ctx := context.Background()
	g := newGate()
	if !g.tryClose(ctx, 0, false) {
		t.Fatal("an idle gate did not close")
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := g.take(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("take at a closed gate until the context ends = %v, want DeadlineExceeded", err)
	}
	taken := make(chan error, 1)
	go func() { taken <- g.take(ctx) }()
	select {
	case err := <-taken:
		t.Fatalf("take at a closed gate returned at once (%v)", err)
	case <-time.After(20 * time.Millisecond):
	}
	g.open()
	if err := <-taken; err != nil {
		t.Fatal(err)
	}
	if g.outOfPool() != 1 {
		t.Errorf("%d out after one take, want 1", g.outOfPool())
	}

	// until reports when cond holds of the gate, under its lock.
	until := func(cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			g.mu.Lock()
			ok := cond()
			g.mu.Unlock()
			if ok {
				return
			}
		}
		t.Fatal("timed out")
	}

	// Not idle: a plain close waits, and new connections are not held back meanwhile.
	closed := make(chan bool, 1)
	cctx, stop := context.WithCancel(ctx)
	go func() { closed <- g.tryClose(cctx, time.Minute, false) }()
	until(func() bool { return g.idle != nil })
	if err := g.take(ctx); err != nil {
		t.Fatalf("take while a plain close waits: %v", err)
	}
	stop()
	if <-closed {
		t.Error("the gate closed with connections out")
	}
	g.giveBack()

	// A firm close holds new connections back while it waits, and lets them go when it gives up.
	cctx, stop = context.WithCancel(ctx)
	go func() { closed <- g.tryClose(cctx, time.Minute, true) }()
	until(func() bool { return g.closed && g.idle != nil })
	go func() { taken <- g.take(ctx) }()
	select {
	case err := <-taken:
		t.Fatalf("take during a firm close returned before it gave up (%v)", err)
	case <-time.After(30 * time.Millisecond):
	}
	stop()
	if <-closed {
		t.Error("the firm close closed with connections out")
	}
	if err := <-taken; err != nil {
		t.Fatal(err)
	}
	g.giveBack()
	g.giveBack()

	// The last connection back lets a waiting close through.
	if err := g.take(ctx); err != nil {
		t.Fatal(err)
	}
	go func() { closed <- g.tryClose(ctx, time.Minute, true) }()
	until(func() bool { return g.closed && g.idle != nil })
	g.giveBack()
	if !<-closed {
		t.Error("the close did not close once the last connection came back")
	}
	if g.outOfPool() != 0 {
		t.Errorf("%d out, want 0", g.outOfPool())
	}
	g.open()
}
