//go:build !unix

package capture

// mapChunk: no anonymous mappings here; blocks stay on the heap.
func mapChunk(int) []byte { return nil }

func unmapChunk([]byte) {}
