package reports

// recent is a small cache in front of a map keyed by names: a journal
// names a few upstreams, routes and outcomes again on every line, and the
// decoder hands out the same string each time, so one string comparison
// (equal pointers: no byte compared) answers most lookups that a map
// would hash. On a million events the maps' hashing, behind the handles
// and ids of every record, had been a tenth of the analysis. A miss (a
// slot shared by two names, a name not seen yet) falls through to the
// map, so the cache never changes an answer.
type recent[V any] struct {
	keys [recentSlots][2]string
	vals [recentSlots]V
	set  [recentSlots]bool
}

const recentSlots = 64

// recentSlot spreads names over the slots by their lengths and end bytes,
// which tell the names of one journal apart more often than not.
func recentSlot(a, b string) int {
	h := len(a)*7 + len(b)*13
	if n := len(a); n > 0 {
		h += int(a[0])*3 + int(a[n-1])*5
	}
	if n := len(b); n > 0 {
		h += int(b[0])*11 + int(b[n-1])*17
	}
	return h & (recentSlots - 1)
}

// get returns the value cached for the pair (a, b); use b = "" for one name.
func (r *recent[V]) get(a, b string) (V, bool) {
	i := recentSlot(a, b)
	if r.set[i] && r.keys[i][0] == a && r.keys[i][1] == b {
		return r.vals[i], true
	}
	var zero V
	return zero, false
}

// put caches v for (a, b), replacing whatever shared its slot.
func (r *recent[V]) put(a, b string, v V) {
	i := recentSlot(a, b)
	r.keys[i], r.vals[i], r.set[i] = [2]string{a, b}, v, true
}
