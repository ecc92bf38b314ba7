package analysis

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"github.com/halfopen/rehearse/journal"
)

// The failover figure's view of the run's requests (failover.go): which
// upstream each request reached first and was handed to last, which
// upstream a kept response header names, and which upstreams serve each
// route.

// failoverLog keeps what the failover figure needs beyond the retry log:
// for each client request whose kept response headers name something, the
// values (matched against the upstream names once all are known).
type failoverLog struct {
	named map[uint64]string // sequence number -> header values, joined
}

func (f *failoverLog) addRequest(p *journal.ClientRequest) {
	if len(p.Headers) == 0 || p.Sent == 0 {
		return
	}
	if f.named == nil {
		f.named = map[uint64]string{}
	}
	vals := make([]string, 0, len(p.Headers))
	for _, k := range slices.Sorted(maps.Keys(p.Headers)) {
		vals = append(vals, p.Headers[k])
	}
	f.named[p.Seq] = strings.Join(vals, " ")
}

// namedUpstream returns the one upstream a header text names as a word
// (split at anything but letters, digits, '-', '_' and '.': "backup",
// "backup/gpt-4o", "openai:backup"), or 0 when it names none or several.
func namedUpstream(text string, ups *interner) uint16 {
	var found uint16
	for _, w := range strings.FieldsFunc(text, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.')
	}) {
		for id, n := range ups.names {
			if id > 0 && strings.EqualFold(n, w) {
				if found != 0 && found != uint16(id) {
					return 0
				}
				found = uint16(id)
			}
		}
	}
	return found
}

// foReq is what the failover figure knows of one client request (an index
// into retryLog.reqs): its first and last call by arrival (-1: none
// carried its number), the upstream a kept header names (0: none) and
// whether the client got an ok answer.
type foReq struct {
	first, last int32
	named       uint16
	ok          bool
}

// foIndex is the run's requests as the failover figure follows them.
type foIndex struct {
	l    *retryLog
	reqs []foReq
	// owner is each call's client request (-1: none); serves the
	// upstreams each route is served by (by retryLog.mps id; routes).
	owner  []int32
	serves map[uint16][]uint16
	// usage reports, by upstream id, that some call to it reported tokens.
	usage map[uint16]bool
	// liveBefore reports, by upstream id, a live call before the run's
	// first fault (a standby has none).
	liveBefore map[uint16]bool
	firstFault int64
	// own are the requests by their route's primary, in send order
	// (byPrimary).
	own map[uint16][]int32
	// quiet counts the requests sent before the first fault by route and
	// the upstream they reached first ({route, 0}: all of the route's):
	// whether a route is balanced over several upstreams.
	quiet map[[2]uint16]int
}

// newFoIndex follows every request: its calls by sequence number, the
// upstream its kept headers name, and each route's primary.
func newFoIndex(l *retryLog, fl *failoverLog, all []span, firstFault int64) *foIndex {
	x := &foIndex{l: l, reqs: make([]foReq, len(l.reqs)), owner: l.callOwners(), serves: map[uint16][]uint16{},
		usage: map[uint16]bool{}, liveBefore: map[uint16]bool{}, firstFault: firstFault, quiet: map[[2]uint16]int{}}
	for i := range x.reqs {
		r := &l.reqs[i]
		x.reqs[i] = foReq{first: -1, last: -1, ok: journal.Outcome(l.outcomes.names[r.outcome]) == journal.OutcomeOK}
		if s, ok := fl.named[r.seq]; ok {
			x.reqs[i].named = namedUpstream(s, l.ups)
		}
	}
	for i := range l.calls {
		k := &l.calls[i]
		if k.flags&rcHealth != 0 {
			continue
		}
		if k.tokens > 0 {
			x.usage[k.up] = true
		}
		if firstFault < 0 || k.at < firstFault {
			x.liveBefore[k.up] = true
		}
		o := x.owner[i]
		if o < 0 {
			continue
		}
		fr := &x.reqs[o]
		if fr.first < 0 || k.at < l.calls[fr.first].at {
			fr.first = int32(i)
		}
		if fr.last < 0 || k.at >= l.calls[fr.last].at {
			fr.last = int32(i)
		}
	}
	x.routes(all, firstFault)
	return x
}

// routes finds which upstreams serve each route: those its requests
// reached first (or that their header named) before the first fault — a
// gateway's preference, or its balancing, shows when nothing fails; for
// a route with no request then, outside every fault window; else over
// the whole run. It keeps the first-call counts before the first fault
// (quiet), for the balancing share.
func (x *foIndex) routes(all []span, firstFault int64) {
	l := x.l
	var levels [3]map[[2]uint16]int // before the first fault, outside the windows, all
	for j := range levels {
		levels[j] = map[[2]uint16]int{}
	}
	for i := range x.reqs {
		up := x.firstUp(i)
		if up == 0 {
			continue
		}
		r := &l.reqs[i]
		key := [2]uint16{r.mp, up}
		levels[2][key]++
		if !inSpans(r.sent, all) {
			levels[1][key]++
		}
		if firstFault < 0 || r.sent < firstFault {
			levels[0][key]++
			x.quiet[key]++
			x.quiet[[2]uint16{r.mp, 0}]++
		}
	}
	level := map[uint16]int{} // by route: the first level with a say
	for j := len(levels) - 1; j >= 0; j-- {
		for k := range levels[j] {
			level[k[0]] = j
		}
	}
	for _, k := range slices.SortedFunc(maps.Keys(levels[2]), func(a, b [2]uint16) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) }) {
		if levels[level[k[0]]][k] > 0 {
			x.serves[k[0]] = append(x.serves[k[0]], k[1])
		}
	}
}

// byPrimary returns the requests of the routes p serves, in send order,
// built once for every upstream: each episode then walks its own
// upstream's requests from its start instead of every request.
func (x *foIndex) byPrimary(p uint16) []int32 {
	if x.own == nil {
		x.own = map[uint16][]int32{}
		for i := range x.l.reqs {
			for _, q := range x.serves[x.l.reqs[i].mp] {
				x.own[q] = append(x.own[q], int32(i))
			}
		}
		for _, rs := range x.own {
			sortStableNearly(rs, func(a, b int32) int { return cmp.Compare(x.l.reqs[a].sent, x.l.reqs[b].sent) })
		}
	}
	return x.own[p]
}

// firstUp is the upstream request i reached first, or the one its header
// names; 0 when neither is known.
func (x *foIndex) firstUp(i int) uint16 {
	if f := x.reqs[i].first; f >= 0 {
		return x.l.calls[f].up
	}
	return x.reqs[i].named
}

// handedTo is the upstream the gateway handed request i to last (its last
// call, else the upstream its header names), and that call (-1: unknown).
func (x *foIndex) handedTo(i int) (uint16, int32) {
	if f := x.reqs[i].last; f >= 0 {
		return x.l.calls[f].up, f
	}
	return x.reqs[i].named, -1
}
