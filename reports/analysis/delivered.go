package analysis

import "github.com/halfopen/rehearse/journal"

// callOutcome is how an upstream call ended, as the analysis counts it.
// A call the gateway hung up on after the answer's content had all been
// written (journal.UpstreamRequest.Delivered: only an event stream's end
// marker was left) completed as far as the gateway is concerned: a
// gateway that has read the last content event and the usage may close
// at once, without waiting for "data: [DONE]" or message_stop. It is
// neither a give-up nor a failed call.
func callOutcome(p *journal.UpstreamRequest) journal.Outcome {
	if p.Outcome == journal.OutcomeUpstreamGone && p.Delivered {
		return journal.OutcomeUpstreamComplete
	}
	return p.Outcome
}
