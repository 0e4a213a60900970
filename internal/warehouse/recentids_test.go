package warehouse

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
)

// TestRecentIDs stores ids the way the load generator makes them (each run's events stamped
// up to 75 ms ahead, runs interleaved, so most batches hold ids below the largest stored one)
// through several rotations of the window, and checks after each batch, against the exact set
// of stored ids:
//   - never "not stored" for a stored id (a stored event must never look new);
//   - "not stored" for every id not stored that is at or above the largest stored id of a
//     recentWindow ids ago (the window answers for at least the last recentWindow ids);
//   - "perhaps" for the ids below the window.
func TestRecentIDs(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 21))
	var r recentIDs
	if r.notStored("x") {
		t.Fatal("notStored before start = true, want false (nothing known)")
	}
	base := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
	var maxID string
	stored := map[string]bool{}
	var storedOrder []string // the ids in the order stored
	var maxAt []string       // maxAt[i]: the largest stored id after storing storedOrder[i]
	// A first stored id before the window starts, as a database that already holds events.
	first := events.DerivedID(base, "first")
	stored[first], maxID = true, first
	r.start(maxID)
	rotations := 0
	at := base
	var unstored []string // ids made and held back, stored some batches later or never
	for batch := 0; len(storedOrder) < 6*recentWindow; batch++ {
		var ids []string
		for range 200 + rng.IntN(800) {
			at = at.Add(time.Duration(rng.IntN(50)) * time.Microsecond)
			// DerivedID, not NewID: NewID never goes below the last id it made.
			id := events.DerivedID(at.Add(time.Duration(rng.IntN(75))*time.Millisecond), fmt.Sprint(len(stored), "-", rng.Uint64()))
			if rng.IntN(50) == 0 {
				unstored = append(unstored, id)
				continue
			}
			ids = append(ids, id)
		}
		if len(unstored) > 0 && rng.IntN(3) == 0 { // a held-back one arrives late
			k := rng.IntN(len(unstored))
			ids = append(ids, unstored[k])
			unstored = slices.Delete(unstored, k, k+1)
		}
		for _, id := range ids {
			if stored[id] && r.notStored(id) {
				t.Fatalf("batch %d: notStored(%s) = true for a stored id", batch, id)
			}
		}
		prevLo := r.prevLo
		for _, id := range ids {
			stored[id] = true
			maxID = max(maxID, id)
			storedOrder, maxAt = append(storedOrder, id), append(maxAt, maxID)
			r.stored(id, maxID)
		}
		if r.prevLo != prevLo {
			rotations++
		}
		// Every stored id says "perhaps"; every held-back id in the window says "not stored".
		if batch%25 == 0 || r.prevLo != prevLo {
			for _, id := range storedOrder[max(0, len(storedOrder)-3*recentWindow):] {
				if r.notStored(id) {
					t.Fatalf("batch %d: notStored(%s) = true for a stored id", batch, id)
				}
			}
			floor := maxAt[max(0, len(maxAt)-recentWindow)]
			for _, id := range unstored {
				switch {
				case id >= floor && !r.notStored(id):
					t.Fatalf("batch %d: notStored(%s) = false for an id not stored, at or above %s (the largest stored id %d ids ago)",
						batch, id, floor, recentWindow)
				case id < r.prevLo && r.notStored(id):
					t.Fatalf("batch %d: notStored(%s) = true below the window's floor %s", batch, id, r.prevLo)
				}
			}
		}
	}
	if rotations < 3 {
		t.Errorf("%d rotations of the window in %d ids, want at least 3", rotations, len(storedOrder))
	}
	if len(r.cur) > recentWindow+1 || len(r.prev) > 2*recentWindow {
		t.Errorf("window holds %d + %d hashes, want at most %d + %d", len(r.cur), len(r.prev), recentWindow+1, 2*recentWindow)
	}
	r.reset()
	if r.notStored(unstored[0]) {
		t.Errorf("notStored after reset = true, want false (nothing known)")
	}
	// Started on an empty database, every id is in the window and none is stored.
	r.start("")
	if !r.notStored(first) {
		t.Errorf("notStored(%s) on an empty database = false, want true", first)
	}
}

// TestRecentIDsBounded: after one id far ahead of the others, every later id falls below the
// current generation's floor; the window must not keep them all.
func TestRecentIDsBounded(t *testing.T) {
	var r recentIDs
	base := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
	maxID := events.DerivedID(base, "start")
	r.start(maxID)
	ahead := events.DerivedID(base.Add(time.Hour), "ahead")
	maxID = ahead
	r.stored(ahead, maxID)
	for i := range 5 * recentWindow {
		r.stored(events.DerivedID(base.Add(time.Duration(i)*time.Millisecond), fmt.Sprint(i)), maxID)
		if len(r.prev) > 2*recentWindow || len(r.cur) > recentWindow {
			t.Fatalf("after %d ids below one an hour ahead the window holds %d + %d hashes, want at most %d + %d",
				i+1, len(r.cur), len(r.prev), recentWindow, 2*recentWindow)
		}
	}
}
