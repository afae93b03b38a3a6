//go:build unix

package step

import "syscall"

// mapMemory returns n bytes of zeroed memory outside the Go heap (an
// anonymous private mapping) and the function that unmaps it. The
// collector neither scans it nor counts it in the heap, so holding it
// does not raise the heap's goal; nothing in it may point into the heap.
func mapMemory(n int) ([]byte, func(), error) {
	if n == 0 {
		return nil, func() {}, nil
	}
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, nil, err
	}
	return b, func() { _ = syscall.Munmap(b) }, nil
}
