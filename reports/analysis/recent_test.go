package analysis

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// The names' cache only ever answers what was put for the same pair:
// many more names than it holds, pairs that differ by one side, the empty
// name, and names built anew (equal bytes, other pointers).
func TestRecentNeverChangesAnAnswer(t *testing.T) {
	var r recent[int]
	want := map[[2]string]int{}
	rng := rand.New(rand.NewPCG(1, 2))
	names := []string{""}
	for i := range 300 {
		names = append(names, fmt.Sprintf("/tools/%d", i), fmt.Sprintf("u%d", i%7))
	}
	hits := 0
	for i := range 20000 {
		a, b := names[rng.IntN(len(names))], names[rng.IntN(12)]
		a = string([]byte(a)) // another copy of the same bytes
		k := [2]string{a, b}
		if v, ok := r.get(a, b); ok {
			hits++
			if w, seen := want[k]; !seen || v != w {
				t.Fatalf("get(%q, %q) = %d, want %d (seen %v)", a, b, v, w, seen)
			}
			continue
		}
		if _, seen := want[k]; !seen {
			want[k] = i
		}
		r.put(a, b, want[k])
	}
	if hits == 0 {
		t.Error("the cache never answered")
	}
	// A few names, as in a journal, are all answered from the cache.
	var few recent[int]
	for i, u := range []string{"search", "weather", "vectors", "llm-primary", "llm-fallback", "ok", "completed", "GET"} {
		few.put(u, "", i)
	}
	for i, u := range []string{"search", "weather", "vectors", "llm-primary", "llm-fallback", "ok", "completed", "GET"} {
		if v, ok := few.get(u, ""); !ok || v != i {
			t.Errorf("get(%q) = %d, %v; want %d from the cache", u, v, ok, i)
		}
	}
}

// A dense table and a sparse one answer alike.
func TestSeqTableDenseAndSparse(t *testing.T) {
	dense := newSeqTable[int32](100, 500)
	sparse := newSeqTable[int32](100, 1<<40)
	if dense.dense == nil || sparse.sparse == nil {
		t.Fatalf("dense %v, sparse %v: wrong kinds", dense.dense != nil, sparse.sparse != nil)
	}
	for i := range 100 {
		q := uint64(i * 5)
		dense.set(q, int32(i))
		sparse.set(q, int32(i))
	}
	for q := uint64(0); q < 520; q++ {
		dv, dok := dense.get(q)
		sv, sok := sparse.get(q)
		if dv != sv || dok != sok || dok != (q%5 == 0 && q < 500) {
			t.Fatalf("seq %d: dense %d %v, sparse %d %v", q, dv, dok, sv, sok)
		}
	}
	// Numbers spread far more than the calls holding them: a map.
	if newSeqTable[int32](10, 1<<20).dense != nil {
		t.Error("a table of 10 numbers up to 2^20 is dense")
	}
}

// sortStableNearly sorts as slices.SortStableFunc does: nearly sorted
// input, input too far out of order for insertion (the merge sort's
// fallback), and equal keys kept in their order.
func TestSortStableNearly(t *testing.T) {
	type kv struct{ k, v int }
	byK := func(a, b kv) int { return a.k - b.k }
	rng := rand.New(rand.NewPCG(3, 4))
	for _, spread := range []int{0, 1, 3, 50, 5000} {
		s := make([]kv, 3000)
		for i := range s {
			s[i] = kv{i/4 + rng.IntN(spread+1), i} // runs of equal keys, displaced by up to spread
		}
		if spread == 5000 {
			slices.Reverse(s)
		}
		want := slices.Clone(s)
		slices.SortStableFunc(want, byK)
		sortStableNearly(s, byK)
		if !slices.Equal(s, want) {
			t.Errorf("spread %d: not what a stable sort gives", spread)
		}
	}
}
