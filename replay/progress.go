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

// showProgress draws the progress line on w until the returned function is
// called, which draws it a last time and ends the line. A hand-written
// one-line refresher rather than progressbar/v3: the line carries several
// counters (errors by class) that a bar does not.
func (ru *run) showProgress(w io.Writer) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				s := ru.st.snapshot()
				fmt.Fprintf(w, "\r\x1b[K%s\n", progressLine(&s, ru.clock.Now(), ru.r.opt.Duration, ru.inFlight.Load()))
				return
			case <-t.C:
				s := ru.st.snapshot()
				fmt.Fprintf(w, "\r\x1b[K%s", progressLine(&s, ru.clock.Now(), ru.r.opt.Duration, ru.inFlight.Load()))
			}
		}
	}()
	return func() { close(done); <-finished }
}

// progressLine renders one progress line: elapsed / remaining, sent, the
// rate over the last full second, requests in flight, and the outcome
// classes other than ok.
func progressLine(s *Summary, elapsed, planned time.Duration, inFlight int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s", fmtClock(elapsed))
	if planned > 0 {
		fmt.Fprintf(&b, " / %s (%s left)", fmtClock(planned), fmtClock(max(planned-elapsed+time.Second-1, 0)))
	}
	rate := 0
	if sec := int(elapsed / time.Second); sec >= 1 && sec-1 < len(s.AchievedRate) {
		rate = s.AchievedRate[sec-1]
	}
	fmt.Fprintf(&b, "  sent %d  %d/s  in flight %d", s.Sent, rate, inFlight)
	if s.Dropped > 0 {
		fmt.Fprintf(&b, "  dropped %d", s.Dropped)
	}
	if s.Late > 0 {
		fmt.Fprintf(&b, "  late %d", s.Late)
	}
	var classes []journal.Outcome
	for o, n := range s.ByOutcome {
		if o != journal.OutcomeOK && o != journal.OutcomeDropped && n > 0 {
			classes = append(classes, o)
		}
	}
	slices.Sort(classes)
	for _, o := range classes {
		fmt.Fprintf(&b, "  %s %d", o, s.ByOutcome[o])
	}
	return b.String()
}

func fmtClock(d time.Duration) string {
	d = d.Truncate(time.Second)
	return fmt.Sprintf("%d:%02d", int(d.Minutes()), int(d.Seconds())%60)
}
