package analysis

// recent is a small cache in front of a map keyed by names: a journal
// names a few upstreams, routes and outcomes again on every line, and the
// decoder hands out the same string each time, so one string comparison
// (equal pointers: no byte compared) answers most lookups that a map
// would hash. On a million events the maps' hashing, behind the handles
// and ids of every record, had been a tenth of the analysis. A miss (a
// name not seen lately, a set with more names than its four ways) falls
// through to the map, so the cache never changes an answer.
type recent[V any] struct {
	keys   [recentSets][4][2]string
	vals   [recentSets][4]V
	set    [recentSets][4]bool
	victim [recentSets]uint8 // the way of each set the next put replaces
}

const recentSets = 16

// recentSet picks the set of (a, b) by their lengths and a few bytes,
// which tell the names of one journal apart more often than not.
func recentSet(a, b string) int {
	h := uint32(len(a))*31 + uint32(len(b))
	for _, s := range [2]string{a, b} {
		if n := len(s); n > 0 {
			h = h*31 + uint32(s[0])
			h = h*31 + uint32(s[n/2])
			h = h*31 + uint32(s[n-1])
		}
	}
	h ^= h >> 7
	return int(h & (recentSets - 1))
}

// get returns the value cached for the pair (a, b); use b = "" for one name.
func (r *recent[V]) get(a, b string) (V, bool) {
	i := recentSet(a, b)
	for w := range 4 {
		if r.set[i][w] && r.keys[i][w][0] == a && r.keys[i][w][1] == b {
			return r.vals[i][w], true
		}
	}
	var zero V
	return zero, false
}

// put caches v for (a, b), replacing the oldest entry of its set.
func (r *recent[V]) put(a, b string, v V) {
	i := recentSet(a, b)
	w := r.victim[i]
	r.keys[i][w], r.vals[i][w], r.set[i][w] = [2]string{a, b}, v, true
	r.victim[i] = (w + 1) & 3
}
