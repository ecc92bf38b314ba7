//go:build unix

package capture

import "syscall"

// mapChunk maps n bytes of anonymous private memory, or returns nil.
func mapChunk(n int) []byte {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil
	}
	return b
}

func unmapChunk(b []byte) { _ = syscall.Munmap(b) }
