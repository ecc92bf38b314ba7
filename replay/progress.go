package replay

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/halfopen/rehearse/journal"
)

// progressEvery is the refresh interval of the progress line.
const progressEvery = 250 * time.Millisecond

// Progress is the replay's running count, for a live display.
type Progress struct {
	// Elapsed is the time since the replay started; Planned its planned
	// length (0 with once and no duration).
	Elapsed, Planned time.Duration
	// Sent counts requests handed to the transport; InFlight those not
	// finished yet; Rate those sent in the last full second.
	Sent     int
	InFlight int64
	Rate     int
	// OK counts finished exchanges with outcome ok; Failed every other
	// finished exchange (fast-fails, 5xx, resets, timeouts…), FastFail
	// the breaker rejections among them.
	OK, Failed, FastFail int
	// Dropped counts slots never sent; Late sends past the lateness
	// threshold.
	Dropped, Late int
	// ByOutcome counts every scheduled request by outcome class.
	ByOutcome map[journal.Outcome]int
	// Final is set on the last call, when the replay has ended.
	Final bool
}

// progress returns the running count now.
func (ru *run) progress(final bool) Progress {
	s := ru.st.snapshot()
	p := Progress{
		Elapsed: ru.clock.Now(), Planned: ru.r.opt.Duration,
		Sent: s.Sent, InFlight: ru.inFlight.Load(), Dropped: s.Dropped, Late: s.Late,
		ByOutcome: s.ByOutcome, Final: final,
	}
	if sec := int(p.Elapsed / time.Second); sec >= 1 && sec-1 < len(s.AchievedRate) {
		p.Rate = s.AchievedRate[sec-1]
	}
	for o, n := range s.ByOutcome {
		switch o {
		case journal.OutcomeOK:
			p.OK += n
		case journal.OutcomeDropped:
		default:
			p.Failed += n
		}
	}
	p.FastFail = s.ByOutcome[journal.OutcomeFastFail]
	return p
}

// showProgress calls fn with the running count every progressEvery until
// the returned function is called, which calls it a last time with Final
// set.
func (ru *run) showProgress(fn func(Progress)) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				fn(ru.progress(true))
				return
			case <-t.C:
				fn(ru.progress(false))
			}
		}
	}()
	return func() { close(done); <-finished }
}

// drawOn draws the progress on w as one line refreshed in place, ended
// when the replay ends: the display of WithProgress.
func drawOn(w io.Writer) func(Progress) {
	return func(p Progress) {
		end := ""
		if p.Final {
			end = "\n"
		}
		fmt.Fprintf(w, "\r\x1b[K%s%s", p.Line(), end)
	}
}

// Line renders the progress as one line: elapsed / planned (remaining),
// sent, the rate over the last full second, requests in flight, and the
// outcome classes other than ok.
func (p Progress) Line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s", FmtClock(p.Elapsed))
	if p.Planned > 0 {
		fmt.Fprintf(&b, " / %s (%s left)", FmtClock(p.Planned), FmtClock(max(p.Planned-p.Elapsed+time.Second-1, 0)))
	}
	fmt.Fprintf(&b, "  sent %d  %d/s  in flight %d", p.Sent, p.Rate, p.InFlight)
	if p.Dropped > 0 {
		fmt.Fprintf(&b, "  dropped %d", p.Dropped)
	}
	if p.Late > 0 {
		fmt.Fprintf(&b, "  late %d", p.Late)
	}
	var classes []journal.Outcome
	for o, n := range p.ByOutcome {
		if o != journal.OutcomeOK && o != journal.OutcomeDropped && n > 0 {
			classes = append(classes, o)
		}
	}
	slices.Sort(classes)
	for _, o := range classes {
		fmt.Fprintf(&b, "  %s %d", o, p.ByOutcome[o])
	}
	return b.String()
}

// FmtClock renders a duration as m:ss, whole seconds.
func FmtClock(d time.Duration) string {
	d = d.Truncate(time.Second)
	return fmt.Sprintf("%d:%02d", int(d.Minutes()), int(d.Seconds())%60)
}
