package analysis

import "slices"

// seqIndex finds the client requests of a sequence number. The replayer
// numbers its requests 0, 1, 2…, so where the numbers are dense the index
// is a slice; otherwise (a journal from elsewhere) a map. On a million
// events the map lookups had been a fifth of the analysis.
type seqIndex struct {
	dense  []int32 // head request by sequence number; -1: none
	sparse map[uint64]int32
	next   []int32 // the next request, in log order, with the same number; -1: none
}

// newSeqIndex indexes n requests whose sequence numbers seq returns.
func newSeqIndex(n int, seq func(i int) uint64) *seqIndex {
	s := &seqIndex{next: make([]int32, n)}
	var top uint64
	for i := range n {
		top = max(top, seq(i))
	}
	if n > 0 && top < uint64(2*n+1024) {
		s.dense = make([]int32, top+1)
		for i := range s.dense {
			s.dense[i] = -1
		}
	} else {
		s.sparse = make(map[uint64]int32, n)
	}
	// Backwards, so that each chain runs in log order.
	for i := n - 1; i >= 0; i-- {
		q := seq(i)
		s.next[i] = -1
		if h, ok := s.first(q); ok {
			s.next[i] = h
		}
		if s.dense != nil {
			s.dense[q] = int32(i)
		} else {
			s.sparse[q] = int32(i)
		}
	}
	return s
}

// first returns the first request, in log order, numbered seq.
func (s *seqIndex) first(seq uint64) (int32, bool) {
	if s.dense != nil {
		if seq >= uint64(len(s.dense)) || s.dense[seq] < 0 {
			return -1, false
		}
		return s.dense[seq], true
	}
	i, ok := s.sparse[seq]
	return i, ok
}

// last returns the last request, in log order, numbered seq.
func (s *seqIndex) last(seq uint64) (int32, bool) {
	i, ok := s.first(seq)
	if !ok {
		return -1, false
	}
	for s.next[i] >= 0 {
		i = s.next[i]
	}
	return i, true
}

// seqTable maps sequence numbers to values, for the per-upstream passes
// that look every call up by its number (and call indexes to the client
// requests that reached them): a slice where the numbers are dense (the
// replayer's), a map otherwise. Dense means at most 8 slots
// per number kept, so that a table never takes much more than the map
// it replaces (an upstream that saw a hundredth of the run's numbers
// gets a map, not a slice as long as the run).
type seqTable[V any] struct {
	dense  []V
	has    []bool
	sparse map[uint64]V
}

// newSeqTable sizes a table for n numbers, the largest of them top.
func newSeqTable[V any](n int, top uint64) *seqTable[V] {
	if top < uint64(8*n+1024) {
		return &seqTable[V]{dense: make([]V, top+1), has: make([]bool, top+1)}
	}
	return &seqTable[V]{sparse: make(map[uint64]V, n)}
}

// get returns seq's value and whether it has one.
func (t *seqTable[V]) get(seq uint64) (V, bool) {
	if t.dense != nil {
		if seq < uint64(len(t.dense)) && t.has[seq] {
			return t.dense[seq], true
		}
		var zero V
		return zero, false
	}
	v, ok := t.sparse[seq]
	return v, ok
}

// set gives seq the value v; a dense table takes only numbers up to the
// top it was made for.
func (t *seqTable[V]) set(seq uint64, v V) {
	if t.dense != nil {
		t.dense[seq], t.has[seq] = v, true
		return
	}
	t.sparse[seq] = v
}

// sortStableNearly sorts s stably by cmp, as slices.SortStableFunc does.
// The analysis's records come nearly in order (an upstream call is
// journaled when it completes, stamped with its arrival; a client request
// when it ends, sorted by when it was due), so they are first put in
// place by insertion, each moved a few places at most; a slice further
// out of order than a few moves per element goes on to the merge sort
// from where insertion left it. Insertion only swaps neighbours that are
// strictly out of order, so equal elements keep their order either way.
func sortStableNearly[T any](s []T, cmp func(a, b T) int) {
	budget := 8*len(s) + 64
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && cmp(s[j], s[j-1]) < 0; j-- {
			if budget == 0 {
				slices.SortStableFunc(s, cmp)
				return
			}
			budget--
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}
