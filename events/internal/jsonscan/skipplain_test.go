package jsonscan

import (
	"bytes"
	"testing"
)

// TestSkipPlain checks skipPlain against the byte-by-byte loop it replaces: every byte value at
// every position of a word, after plain bytes, with every start, and behind a second byte that
// is not plain (a borrow from the first must not hide it or move it).
func TestSkipPlain(t *testing.T) {
	slow := func(b []byte, j int) int {
		for j < len(b) && plain[b[j]] {
			j++
		}
		return j
	}
	for v := 0; v < 256; v++ {
		for pos := 0; pos < 20; pos++ {
			for _, after := range []int{-1, 0, 0x1f, '"', '\\', 0x7f, 0x80, 0xff} {
				b := bytes.Repeat([]byte{'a'}, 24)
				b[pos] = byte(v)
				if after >= 0 && pos+1 < len(b) {
					b[pos+1] = byte(after)
				}
				for j := 0; j <= len(b); j++ {
					if got, want := skipPlain(b, j), slow(b, j); got != want {
						t.Fatalf("skipPlain(%q, %d) = %d, want %d", b, j, got, want)
					}
				}
			}
		}
	}
	// Every pair of bytes in the word's first two places, before plain bytes.
	for v := 0; v < 256; v++ {
		for w := 0; w < 256; w++ {
			b := []byte{byte(v), byte(w), 'x', 'y', 'z', ' ', '~', 0x7f, 'a'}
			if got, want := skipPlain(b, 0), slow(b, 0); got != want {
				t.Fatalf("skipPlain(%q, 0) = %d, want %d", b, got, want)
			}
		}
	}
}
