package analysis

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/reports/num"
)

// How a run can end without its gateway being judged
//
// Three things end a run's evidence early, and none of them is the
// gateway's breaker at fault: an interruption (Ctrl-C, SIGTERM, SIGHUP),
// a harness that stopped sending (frozen by SIGSTOP, a sleeping laptop, a
// starved machine), and a gateway under test that stopped answering
// (killed, crashed: the OS refuses its connections). Each is read from the
// journal alone, so a re-render says the same, and each is named in the
// report, the outcome line and history instead of a verdict on the
// expectations (HarnessFailure, Interrupted).

// PhaseInterrupted is the phase the conductor records the moment a run is
// interrupted, before anything stops: the time the reports call
// "interrupted at".
const PhaseInterrupted = "interrupted"

// OutcomeCut is the client outcome class of a request cut by the
// interruption: sent before it, ended without an answer after it (the
// harness stopping, not the gateway). It replaces the transport class the
// replayer recorded, in the phases' outcome counts and the timeline.
const OutcomeCut = "cut_by_interruption"

// Stall is the longest span in which requests were due and the harness
// sent none, long enough that the analysis cannot see through it
// (max(GapFactor × the schedule's interval, MinGap), the span the breaker
// inference reads as traffic turned away).
type Stall struct {
	// FromS is when the first request the stall held back was due; ToS
	// the send that ended it.
	FromS float64 `json:"from_s"`
	ToS   float64 `json:"to_s"`
	// Missed counts the requests due in it that did not go out on time:
	// dropped, or sent when the next request was already due.
	Missed int64 `json:"missed"`
	// Stalls counts every such span (this is the longest).
	Stalls int `json:"stalls"`
}

// Text is the stall in words, for the outcome line and the reports.
func (s *Stall) Text() string {
	t := fmt.Sprintf("the harness stalled from T+%s to T+%s: %d %s missed (sent late or not at all)",
		num.Sec(s.FromS), num.Sec(s.ToS), s.Missed, num.Pick(int(s.Missed), "send", "sends"))
	if s.Stalls > 1 {
		t += fmt.Sprintf("; %d stalls in all", s.Stalls)
	}
	return t
}

// GatewayGone is a gateway under test that stopped answering mid-run:
// from AtS to the end of the replay every request sent was refused by the
// OS (connection refused: nothing listened any more), for longer than the
// analysis can see through, after the gateway had answered before.
type GatewayGone struct {
	// AtS is when the first refused request of that streak was sent;
	// LastAnswerS when the gateway's last answer (any status) ended.
	AtS         float64  `json:"at_s"`
	LastAnswerS *float64 `json:"last_answer_s"`
	// Refused counts the requests refused from AtS on; Due every request
	// of the replay.
	Refused int64 `json:"refused"`
	Due     int64 `json:"due"`
}

// Text is the gateway's end in words.
func (g *GatewayGone) Text() string {
	return fmt.Sprintf("the gateway stopped answering at T+%s: %d of %d requests refused by the OS (connection refused) from then on",
		num.Sec(g.AtS), g.Refused, g.Due)
}

// HarnessFailure returns the cause when the run ended because the harness
// or its environment failed (a taken port, an unreachable gateway), the
// harness stalled (Replay.Stall), or the gateway under test stopped
// answering mid-run (Run.GatewayGone): its expectations judged nothing,
// so reports show the cause instead of a verdict. It is "" for a run that
// completed without either, and for an interrupted run (Interrupted).
func (a *Analysis) HarnessFailure() string {
	switch {
	case a.Run.EndReason == journal.EndFailed:
		if a.Run.EndError == "" {
			return "the run failed (no cause recorded)"
		}
		// "Harness failure: environment failure: …" says the class twice.
		return strings.TrimPrefix(a.Run.EndError, rehearse.ErrEnvironment.Error()+": ")
	case a.Run.EndReason == journal.EndInterrupted:
		return ""
	case a.Run.GatewayGone != nil:
		return a.Run.GatewayGone.Text()
	case a.Replay.Stall != nil:
		return a.Replay.Stall.Text()
	}
	return ""
}

// Interrupted returns "interrupted at T+…" for an interrupted run, "" for
// any other: its expectations are not evaluated (a run cut short says
// nothing against the gateway).
func (a *Analysis) Interrupted() string {
	if a.Run.EndReason != journal.EndInterrupted {
		return ""
	}
	if a.Run.InterruptedAtS == nil {
		return "interrupted"
	}
	return "interrupted at T+" + num.Sec(*a.Run.InterruptedAtS)
}

// Judged reports whether the run's expectations were judged: not when the
// run was interrupted or the harness failed. Reports, JUnit and history
// show an unjudged run's expectations as not evaluated.
func (a *Analysis) Judged() bool { return a.HarnessFailure() == "" && a.Interrupted() == "" }

// markCut finds when an interrupted run was interrupted (the phase the
// conductor records then; in older journals the stop phase) and gives the
// requests it cut the class OutcomeCut: sent before that moment, ended
// after it (or never) without an answer. c.reqs are in schedule order.
func (c *collector) markCut(a *Analysis) {
	if c.end == nil || c.end.Reason != journal.EndInterrupted {
		return
	}
	at := c.interruptAt
	if at < 0 {
		at = c.stopAt
	}
	if at < 0 {
		return
	}
	a.Run.InterruptedAtS = Ptr(seconds(at))
	cut := nameOf(OutcomeCut)
	for i := range c.reqs {
		r := &c.reqs[i]
		if r.sent == 0 || r.sent >= at || (r.done > 0 && r.done < at) || r.fastFail {
			continue
		}
		if clientGroup(r.outcome.Value()) == "transport" {
			r.outcome = cut
			a.Run.CutByInterruption++
		}
	}
}

// sendInterval is the schedule's interval between requests: the asked
// rate's, or (a capture's own timing) the median spacing of the due
// times; 0 when there is none.
func (c *collector) sendInterval(rate float64) time.Duration {
	if rate > 0 {
		return time.Duration(float64(time.Second) / rate)
	}
	var sp []time.Duration
	for i := 1; i < len(c.reqs); i++ {
		if d := c.reqs[i].sched - c.reqs[i-1].sched; d > 0 {
			sp = append(sp, d)
		}
	}
	if len(sp) == 0 {
		return 0
	}
	return num.Median(sp)
}

// blindSpan is how long traffic may stop before the analysis cannot see
// through it: max(GapFactor × the schedule's interval, MinGap).
func blindSpan(iv time.Duration) time.Duration { return max(GapFactor*iv, MinGap) }

// gatewayGone finds a gateway that stopped answering: the replay's last
// requests, from some moment on, all refused by the OS (dropped ones
// aside), over at least the analysis's blind span, after at least one
// request that reached it. A gateway refusing for a moment and answering
// again, or not answering from the start (the readiness check's harness
// failure), is not gone.
func (c *collector) gatewayGone(a *Analysis) {
	iv := c.sendInterval(a.Run.RatePerS)
	if iv <= 0 {
		return
	}
	refusedOutcome := nameOf(string(journal.OutcomeConnectRefused))
	first, refused := -1, int64(0)
	i := len(c.reqs) - 1
	for ; i >= 0; i-- {
		r := &c.reqs[i]
		if r.sent == 0 {
			continue
		}
		if r.outcome != refusedOutcome {
			break
		}
		first, refused = i, refused+1
	}
	if first < 0 || i < 0 || c.reqs[len(c.reqs)-1].sched-c.reqs[first].sched < blindSpan(iv) {
		return
	}
	g := &GatewayGone{AtS: seconds(c.reqs[first].sent), Refused: refused, Due: int64(len(c.reqs))}
	var last time.Duration
	for j := range first {
		if r := &c.reqs[j]; r.done > 0 && r.outcome != refusedOutcome && r.done > last {
			last = r.done
		}
	}
	if last > 0 {
		g.LastAnswerS = Ptr(seconds(last))
	}
	a.Run.GatewayGone = g
}

// lateness records how late each due request went out into h (µs): its
// send less its due time, or for one dropped while the harness was late
// (a missed slot) the wait until the next send at or after its due time,
// when there is one. A request dropped on time (the in-flight cap: a
// gateway holding every connection) is the gateway's doing, not
// lateness. sends are sorted.
func (c *collector) lateness(h *hdrhistogram.Histogram, sends []time.Duration) {
	for i := range c.reqs {
		r := &c.reqs[i]
		if r.outcome != outDropped && r.sent > 0 {
			record(h, r.sent-r.sched)
			continue
		}
		if !r.late {
			continue
		}
		if j, _ := slices.BinarySearch(sends, r.sched); j < len(sends) {
			record(h, sends[j]-r.sched)
		}
	}
}

// missed reports whether request i did not go out on time: dropped while
// late, or sent when the next request of the schedule was already due.
func (c *collector) missed(i int) bool {
	r := &c.reqs[i]
	if r.outcome == outDropped || r.sent == 0 {
		return r.late
	}
	return i+1 < len(c.reqs) && r.sent >= c.reqs[i+1].sched && c.reqs[i+1].sched > r.sched
}
