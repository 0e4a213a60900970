//go:build !unix

package warehouse

// mapWords reports that words cannot be mapped outside the Go heap here: the levels are
// allocated in it.
func mapWords(n int) (w []uint64, ok bool) { return nil, false }

func unmapWords(w []uint64) {}
