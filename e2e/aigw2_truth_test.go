package e2e

import (
	"bufio"
	"cmp"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/halfopen/rehearse/journal"
)

// What the fallback gateway's log and the run's journal say, per client
// request, for TestFallbackGatewayAtTwoRates to hold the figures to.

func readAIGWLog(t *testing.T, path string) []aigwEntry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []aigwEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e aigwEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("gateway log: %v: %s", err, sc.Text())
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

var seqStamp = regexp.MustCompile(`\[rehearse:seq=(\d+)\]`)

// logTruth is what the gateway's log says it did.
type logTruth struct {
	requests       int
	calls          map[string]int    // by target
	attempts       map[string]int64  // primary calls per request → requests
	waits          [][]float64       // by retry: the waits before it, ms
	fellBack       map[string]int    // requests sent to the fallback, by reason
	servedFallback map[uint64]bool   // the requests sent to the fallback, by id
	outcomes       map[string]int64  // the answers' outcomes
	giveUps        []float64         // calls abandoned at the timeout, ms
	giveUpThenOK   int               // … whose request the fallback then served
	unstamped      int               // requests without the body stamp
	bySeq          map[uint64]uint64 // request id → seq
	perSeq         map[uint64]*seqTruth
}

// seqTruth is one client request as the gateway logged it.
type seqTruth struct {
	calls   map[string]int // by target
	outcome string
	target  string    // the target that answered
	waits   []float64 // before each primary retry, ms
	// primary and fallback are its calls to each, as logged.
	primary, fallback []logCall
}

// logCall is one provider call as the gateway logged it: its start, when
// the response head came (zero: none came) and its end. The upstream saw
// it arrive between start and by(): after the gateway began it, before
// the gateway had an answer to it.
type logCall struct{ start, headers, end time.Time }

// by is the latest the call can have reached the upstream.
func (c logCall) by() time.Time {
	if !c.headers.IsZero() {
		return c.headers
	}
	return c.end
}

func truthOf(t *testing.T, log []aigwEntry) *logTruth {
	t.Helper()
	lt := &logTruth{calls: map[string]int{}, attempts: map[string]int64{}, fellBack: map[string]int{},
		servedFallback: map[uint64]bool{}, outcomes: map[string]int64{}, bySeq: map[uint64]uint64{},
		perSeq: map[uint64]*seqTruth{}}
	primaryCalls := map[uint64]int{}
	gaveUp := map[uint64]bool{}
	for _, e := range log {
		switch e.Ev {
		case "request":
			lt.requests++
			m := seqStamp.FindStringSubmatch(e.Input)
			if m == nil {
				lt.unstamped++
				continue
			}
			seq, _ := strconv.ParseUint(m[1], 10, 64)
			lt.bySeq[e.Req] = seq
			lt.perSeq[seq] = &seqTruth{calls: map[string]int{}}
		case "attempt_start":
			lt.calls[e.Target]++
			if st := lt.of(e.Req); st != nil {
				st.calls[e.Target]++
				if e.Target == "primary" {
					st.primary = append(st.primary, logCall{start: e.T})
					if e.Attempt > 1 {
						st.waits = append(st.waits, e.WaitMs)
					}
				} else {
					st.fallback = append(st.fallback, logCall{start: e.T})
				}
			}
			if e.Target == "primary" {
				primaryCalls[e.Req]++
				if e.Attempt > 1 {
					for len(lt.waits) < e.Attempt-1 {
						lt.waits = append(lt.waits, nil)
					}
					lt.waits[e.Attempt-2] = append(lt.waits[e.Attempt-2], e.WaitMs)
				}
			}
		case "attempt_end":
			if st := lt.of(e.Req); st != nil {
				calls := st.primary
				if e.Target != "primary" {
					calls = st.fallback
				}
				if len(calls) > 0 {
					c := &calls[len(calls)-1]
					c.end = e.T
					if e.HeadersMs > 0 {
						c.headers = c.start.Add(time.Duration(e.HeadersMs * float64(time.Millisecond)))
					}
				}
			}
		case "give_up":
			lt.giveUps = append(lt.giveUps, e.ElapsedMs)
			gaveUp[e.Req] = true
		case "fallback":
			lt.fellBack[e.Reason]++
			lt.servedFallback[e.Req] = true
		case "response":
			lt.outcomes[e.Outcome]++
			if st := lt.of(e.Req); st != nil {
				st.outcome, st.target = e.Outcome, e.Target
			}
			if e.Target == "fallback" && gaveUp[e.Req] && e.Outcome == "ok" {
				lt.giveUpThenOK++
			}
		}
	}
	for _, n := range primaryCalls {
		lt.attempts[strconv.Itoa(n)]++
	}
	return lt
}

// of returns the gateway's request id's record, nil when it had no stamp.
func (lt *logTruth) of(id uint64) *seqTruth {
	seq, ok := lt.bySeq[id]
	if !ok {
		return nil
	}
	return lt.perSeq[seq]
}

// journalView is what the run's journal holds of each client request
// (its calls by upstream, its outcome) and of the calls the gateway hung
// up on.
type journalView struct {
	wallStart time.Time // the instant of run time 0
	calls     map[uint64]map[string]int
	outcome   map[uint64]string
	sent      map[uint64]time.Duration // in run time
	// primary holds each request's calls to the primary, [arrival, end]
	// in run time, in journal order.
	primary map[uint64][][2]time.Duration
	hungUp  map[string][]float64 // by upstream: arrival to hang-up, ms
}

func readJournalView(t *testing.T, dir string) *journalView {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v := &journalView{calls: map[uint64]map[string]int{}, outcome: map[uint64]string{}, sent: map[uint64]time.Duration{},
		primary: map[uint64][][2]time.Duration{}, hungUp: map[string][]float64{}}
	_, err = journal.DecodeTransient(f, func(ev journal.Event) {
		switch p := ev.Payload.(type) {
		case *journal.RunStart:
			v.wallStart = p.WallStart
		case *journal.UpstreamRequest:
			if p.HealthCheck || p.Seq == nil {
				return
			}
			if v.calls[*p.Seq] == nil {
				v.calls[*p.Seq] = map[string]int{}
			}
			v.calls[*p.Seq][p.Upstream]++
			if p.Upstream == "primary" {
				v.primary[*p.Seq] = append(v.primary[*p.Seq], [2]time.Duration{ev.T, p.Done})
			}
			if p.Outcome == journal.OutcomeUpstreamGone {
				v.hungUp[p.Upstream] = append(v.hungUp[p.Upstream], msOf(p.Done-ev.T))
			}
		case *journal.ClientRequest:
			v.outcome[p.Seq] = string(p.Outcome)
			v.sent[p.Seq] = p.Sent
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// checkPerRequest holds each client request's calls, outcome and waits
// before the primary's retries in the journal (a retry's arrival less
// the previous call's end, as the retry figures measure it) to the
// gateway's log. A wait agrees within max(5 %, 20 ms); on a loaded
// machine, within the bound the log alone sets: the retry reached the
// upstream between its logged start and its answer's head, and the
// upstream ended the previous call between that call's logged start and
// end, so the journal's wait exceeds the logged one by at most those two
// spans (20 ms either side). It returns the requests that differ, the
// waits that needed the bound, and the widest bound they needed (ms).
func checkPerRequest(t *testing.T, lt *logTruth, jv *journalView) (bad, bounded int, widest float64) {
	t.Helper()
	for seq, st := range lt.perSeq {
		jc := jv.calls[seq]
		calls := slices.Clone(jv.primary[seq])
		slices.SortFunc(calls, func(a, b [2]time.Duration) int { return cmp.Compare(a[0], b[0]) })
		waits := make([]float64, 0, len(st.waits))
		for i := 1; i < len(calls); i++ {
			waits = append(waits, msOf(calls[i][0]-calls[i-1][1]))
		}
		ok := jc["primary"] == st.calls["primary"] && jc["fallback"] == st.calls["fallback"] && jv.outcome[seq] == st.outcome &&
			len(waits) == len(st.waits) && len(st.primary) == len(calls)
		for i := 0; ok && i < len(waits); i++ {
			if agrees(waits[i], st.waits[i], 20) {
				continue
			}
			prev, cur := st.primary[i], st.primary[i+1]
			span := msOf(cur.by().Sub(cur.start) + prev.end.Sub(prev.start))
			d := waits[i] - st.waits[i]
			ok = d >= -20 && d <= span+20
			if ok {
				bounded++
				widest = max(widest, span)
			}
		}
		if !ok {
			if bad++; bad <= 5 {
				t.Errorf("request %d: journal calls %v, outcome %s, waits %.1f ms; gateway log %v, %s, %.1f ms", seq, jc, jv.outcome[seq], waits, st.calls, st.outcome, st.waits)
			}
		}
	}
	return bad, bounded, widest
}
