//go:build unix

package warehouse

import (
	"syscall"
	"unsafe"
)

// mapWords returns n zeroed words mapped from the OS, outside the Go heap, or ok false if the
// OS refused them.
func mapWords(n int) (w []uint64, ok bool) {
	b, err := syscall.Mmap(-1, 0, n*8, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, false
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(b))), n), true
}

// unmapWords returns words from mapWords to the OS.
func unmapWords(w []uint64) {
	_ = syscall.Munmap(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(w))), len(w)*8))
}
