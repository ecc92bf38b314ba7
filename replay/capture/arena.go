package capture

import (
	"runtime"
	"sync/atomic"
)

// blockArena holds a Corpus's compressed blocks outside the Go heap where
// the platform allows (arena_unix.go): they live as long as the corpus,
// hold no pointers, and are most of its memory, and the collector sizes
// its heap goal at twice the live heap, so blocks on the heap would cost
// about twice their size in a replay's peak memory. Chunks are returned
// to the system when the corpus is collected.
type blockArena struct {
	chunks [][]byte
	cur    []byte
	freed  atomic.Bool // for the test that it is
}

// arenaChunk is the size of the chunks blocks are carved from.
const arenaChunk = 4 << 20

// alloc returns n bytes of arena memory (heap memory where mapping is
// not available or fails).
func (a *blockArena) alloc(n int) []byte {
	if n > cap(a.cur)-len(a.cur) {
		chunk := mapChunk(max(arenaChunk, n))
		if chunk == nil {
			return make([]byte, n)
		}
		a.chunks = append(a.chunks, chunk)
		a.cur = chunk[:0]
	}
	l := len(a.cur)
	a.cur = a.cur[:l+n]
	return a.cur[l : l+n : l+n]
}

// free unmaps every chunk.
func (a *blockArena) free() {
	for _, c := range a.chunks {
		unmapChunk(c)
	}
	a.chunks, a.cur = nil, nil
	a.freed.Store(true)
}

// arenaFor returns c's arena, creating it with a cleanup that frees it
// once c is unreachable (nothing of the arena escapes: At copies out).
func (c *Corpus) arenaFor() *blockArena {
	if c.arena == nil {
		c.arena = &blockArena{}
		runtime.AddCleanup(c, func(a *blockArena) { a.free() }, c.arena)
	}
	return c.arena
}
