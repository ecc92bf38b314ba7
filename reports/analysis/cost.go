package analysis

import (
	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/reports/num"
)

// cost sums upstream work per completed request before and during the
// fault windows.
func (l *retryLog) cost(during []span, firstFault int64) CostFigures {
	var c CostFigures
	phase := func(t int64) int { // 0 before, 1 during, -1 other
		switch {
		case inSpans(t, during):
			return 1
		case firstFault < 0 || t < firstFault:
			return 0
		}
		return -1
	}
	owners := l.callOwners()
	reqPhase := make([]int8, len(l.reqs))
	for i := range l.reqs {
		r := &l.reqs[i]
		reqPhase[i] = int8(phase(r.sent))
		if journal.Outcome(l.outcomes.names[r.outcome]) != journal.OutcomeOK || r.status < 200 || r.status > 299 {
			continue
		}
		switch phase(r.sent) {
		case 0:
			c.CompletedBefore++
		case 1:
			c.CompletedDuring++
		}
	}
	for i := range l.calls {
		k := &l.calls[i]
		if k.flags&rcHealth != 0 {
			continue
		}
		// A call belongs to its client request's phase (its retries may
		// come after the window closed); a call without one, to its own.
		var ph int
		if o := owners[i]; o >= 0 {
			ph = int(reqPhase[o])
		} else {
			ph = phase(k.at)
		}
		switch ph {
		case 0:
			c.CallsBefore++
			c.TokensBefore += int64(k.tokens)
		case 1:
			c.CallsDuring++
			c.TokensDuring += int64(k.tokens)
		}
	}
	per := func(work, done int64) *float64 {
		if done == 0 {
			return nil
		}
		return Ptr(num.Round3(float64(work) / float64(done)))
	}
	c.CallsPerCompletedBefore, c.CallsPerCompletedDuring = per(c.CallsBefore, c.CompletedBefore), per(c.CallsDuring, c.CompletedDuring)
	if c.TokensBefore > 0 || c.TokensDuring > 0 {
		c.TokensPerCompletedBefore, c.TokensPerCompletedDuring = per(c.TokensBefore, c.CompletedBefore), per(c.TokensDuring, c.CompletedDuring)
	}
	ratio := func(a, b *float64) *float64 {
		if a == nil || b == nil || *b == 0 {
			return nil
		}
		return Ptr(num.Round3(*a / *b))
	}
	c.CallsAmplification = ratio(c.CallsPerCompletedDuring, c.CallsPerCompletedBefore)
	c.TokensAmplification = ratio(c.TokensPerCompletedDuring, c.TokensPerCompletedBefore)
	c.WorkWithoutCompletion = c.CompletedDuring == 0 && c.CallsDuring > 0
	return c
}

// callOwners returns, for each call, the client request whose phase the
// cost figures count it in: the last request of the log with the call's
// sequence number, or -1 (no sequence number, or none of the replayed
// requests). Computed once: cost runs for the run and for each episode.
func (l *retryLog) callOwners() []int32 {
	if l.owners != nil {
		return l.owners
	}
	seqs := l.seqs()
	l.owners = make([]int32, len(l.calls))
	for i := range l.calls {
		l.owners[i] = -1
		if k := &l.calls[i]; k.flags&rcSeq != 0 {
			if o, ok := seqs.last(k.seq); ok {
				l.owners[i] = o
			}
		}
	}
	return l.owners
}
