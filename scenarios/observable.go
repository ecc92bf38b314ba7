package scenarios

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/halfopen/rehearse"
)

// Plan-time observability
//
// A scenario can be well formed and still only able to fail: an
// expectation the run has no way to observe is "not observable" in the
// report, which fails like a breach — after the whole run, at 03:00 on
// Monday. CheckObservable refuses such plans before anything starts. It
// is not part of Validate: Parse validates the file before the command
// line's flags apply (a --duration may make a plan observable or not), so
// the check runs on the scenario as it will run — rehearsal.Check calls
// it, and validate, run, run --dry-run and the scheduling commands all go
// through rehearsal.Check.
//
// The expectations it knows about are those whose evaluation
// (reports/evaluate.go) can only ever give "not observable" under the
// plan:
//
//   - metrics_lag_max compares the gateway's metrics with the black-box
//     view: without gateway.metrics there is no sample to compare.
//   - closes_within, successes_to_close_min and metrics_lag_max (its close
//     lag) need the breaker to close after the fault: a fault on a covered
//     upstream that ends at or after the replay's end (or has no for:)
//     leaves every such episode "never closed before the run ended".
//   - fails_over_within and fails_back_within need somewhere to fail
//     over to: a scenario that serves a single upstream gives the gateway
//     no second upstream, and fails_back_within a fault that ends before
//     the replay (as the recovery expectations above).
//   - healthy_unaffected and cost_amplification_max compare client
//     requests before the first fault with those during the faults: a
//     fault at 0s (at: left out) leaves nothing before it.
//
// And one plan no gateway can run: a gateway given by URL is configured
// outside rehearse, so it cannot be pointed at an upstream whose port is
// picked when the run starts (listen: 127.0.0.1:0, the default).

// recoveryExpectations need a close (fails_back_within: a fail-back)
// after the fault's end, by key.
var recoveryExpectations = []string{"closes_within", "successes_to_close_min", "metrics_lag_max", "fails_back_within"}

// CheckObservable refuses, as rehearse.ConfigErrors placed at the
// offending keys (invalid input, exit code 2), an expectation the run
// could not observe and upstreams an external gateway cannot be configured
// to call. requests and span are the capture's replayable requests and the
// time from the first to the last (rehearsal.Plan): they give the length
// of a replay.once run; 0 when not known, and then a once run's length is
// not judged.
func (s *Scenario) CheckObservable(requests int, span time.Duration) error {
	var errs rehearse.ConfigErrors
	add := func(path string, err error) { errs = append(errs, s.at(path, err)) }
	if e := s.Expectations; e != nil {
		stateSource := s.Gateway.Metrics != nil || s.Gateway.Log != nil
		if e.MetricsLagMax != nil && !stateSource {
			add("expectations.metrics_lag_max", errors.New("cannot be observed: it compares the gateway's metrics with what the harness sees, and this scenario reads no metrics: set gateway.metrics (url and preset) or gateway.log (path and preset), or remove metrics_lag_max"))
		}
		if end, why, ok := s.replayEnd(requests, span); ok {
			set := map[string]bool{
				"closes_within":          e.ClosesWithin != nil,
				"successes_to_close_min": e.SuccessesToCloseMin != nil,
				// Without metrics it is refused above already.
				"metrics_lag_max":   e.MetricsLagMax != nil && stateSource,
				"fails_back_within": e.FailsBackWithin != nil,
			}
			if late := s.faultsOutlasting(end); len(late) > 0 {
				for _, key := range recoveryExpectations {
					if set[key] {
						what := "the breaker to close"
						if key == "fails_back_within" {
							what = "the gateway to fail back to the faulted upstream"
						}
						add("expectations."+key, fmt.Errorf("cannot be observed: it needs %s after the fault ends, and the replay ends at %s (%s) while %s: end each fault before the replay does (for:), %s, or remove %s",
							what, end, why, strings.Join(late, ", "), s.longerRun(), key))
					}
				}
			}
		}
	}
	errs = append(errs, s.nothingBefore()...)
	errs = append(errs, s.nowhereToFailOver()...)
	errs = append(errs, s.randomPorts()...)
	if len(errs) == 0 {
		return nil
	}
	slices.SortStableFunc(errs, func(a, b *rehearse.ConfigError) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col))
	})
	return errs
}

// replayEnd is when the replay stops sending, from its start (the faults'
// times count from there too), and what sets it, in words; ok is false
// when it is not known: one pass of a capture whose size was not given.
func (s *Scenario) replayEnd(requests int, span time.Duration) (end time.Duration, why string, ok bool) {
	r := s.Replay
	if d := r.Duration.D(); d > 0 {
		end, why, ok = d, s.keyText("replay.duration"), true
	}
	if !r.Once || requests == 0 {
		return end, why, ok
	}
	// One pass ends the replay too, when it is the shorter.
	var once time.Duration
	var onceWhy string
	if r.Timing == "original" {
		speed := r.Speed
		if speed <= 0 {
			speed = 1
		}
		once = time.Duration(float64(span) / speed).Round(time.Millisecond)
		onceWhy = fmt.Sprintf("replay.once: one pass of the capture, %s of it at speed %g", span.Round(time.Millisecond), speed)
	} else {
		// A duration d at rate r sends d×r requests: one pass of n
		// requests lasts n/r.
		once = time.Duration(float64(requests) / r.Rate * float64(time.Second)).Round(time.Millisecond)
		onceWhy = fmt.Sprintf("replay.once: one pass of %d requests at %g req/s", requests, r.Rate)
	}
	if !ok || once < end {
		return once, onceWhy, true
	}
	return end, why, ok
}

// faultsOutlasting describes the faults on the upstreams the breaker
// expectations cover that are still on at end, each with its place.
func (s *Scenario) faultsOutlasting(end time.Duration) []string {
	var covered []string
	if e := s.Expectations; e != nil {
		covered = e.Upstreams
	}
	var out []string
	for i, f := range s.Faults {
		if len(covered) > 0 && !slices.Contains(covered, f.Upstream) {
			continue
		}
		p := fmt.Sprintf("faults[%d]", i)
		name := f.Name
		if name == "" {
			name = f.Upstream + " " + f.Type
		}
		switch stop := f.At.D() + f.For.D(); {
		case f.For.D() <= 0:
			out = append(out, fmt.Sprintf("%s (%s, %s) has no for: and lasts to the end", p, name, s.lineText(p)))
		case stop >= end:
			out = append(out, fmt.Sprintf("%s (%s, %s) ends at %s", p, name, s.lineText(p), stop))
		}
	}
	return out
}

// randomPorts refuses, for a gateway given by URL, each upstream that
// listens on a port picked at start.
func (s *Scenario) randomPorts() rehearse.ConfigErrors {
	if s.Gateway.URL == "" || s.Gateway.Builtin != nil {
		return nil
	}
	gw := "the gateway under test (gateway.url)"
	if _, ok := s.flags["gateway.url"]; ok {
		gw = "the gateway given by " + s.keyText("gateway.url")
	}
	var errs rehearse.ConfigErrors
	for i, u := range s.Upstreams {
		listen := u.Listen
		if listen == "" {
			listen = "127.0.0.1:0"
		}
		host, port, err := net.SplitHostPort(listen)
		if err != nil || (port != "0" && port != "") {
			continue // a fixed port; a malformed address is inject's to refuse
		}
		if host == "" {
			host = "127.0.0.1"
		}
		path := fmt.Sprintf("upstreams[%d].listen", i)
		if _, inFile := s.positions[path]; !inFile {
			path = fmt.Sprintf("upstreams[%d]", i)
		}
		fixed := net.JoinHostPort(host, fmt.Sprint(9101+i))
		msg := fmt.Sprintf("%s is configured outside rehearse and cannot call %s on a port picked when the run starts (%s): give it a fixed one, e.g. listen: %q, and point the gateway's upstream %s at http://%s",
			gw, u.Name, listen, fixed, u.Name, fixed)
		if s.Builtin != "" {
			msg += fmt.Sprintf(" (rehearse scenarios init %s writes the drill to a file to edit)", s.Builtin)
		}
		errs = append(errs, s.at(path, errors.New(msg)))
	}
	return errs
}

// keyText names where a scenario value comes from, for messages: the
// flag that set it, its line in the file, or its default.
func (s *Scenario) keyText(path string) string {
	if name, ok := s.flags[path]; ok {
		if path == "replay.duration" {
			return fmt.Sprintf("--%s %s", name, s.Replay.Duration)
		}
		return "--" + name
	}
	if p, ok := s.positions[path]; ok {
		return fmt.Sprintf("%s, line %d", path, p.Line)
	}
	return "the default " + path
}

// lineText is "line N" of the key at path (or its nearest parent), or
// "not in the file".
func (s *Scenario) lineText(path string) string {
	for p := path; p != ""; p = parentPath(p) {
		if ps, ok := s.positions[p]; ok {
			return fmt.Sprintf("line %d", ps.Line)
		}
	}
	return "not in the file"
}

// longerRun says how to make the replay longer: the flag when the length
// came from it.
func (s *Scenario) longerRun() string {
	if name, ok := s.flags["replay.duration"]; ok {
		return "give a longer --" + name
	}
	return "lengthen replay.duration"
}

// nothingBefore refuses the expectations that compare the client
// requests before the first fault with those during the faults when a
// fault starts with the replay: the first request is due after it.
func (s *Scenario) nothingBefore() rehearse.ConfigErrors {
	e := s.Expectations
	if e == nil {
		return nil
	}
	first := -1
	for i, f := range s.Faults {
		if f.At.D() <= 0 {
			first = i
			break
		}
	}
	if first < 0 {
		return nil
	}
	var errs rehearse.ConfigErrors
	p := fmt.Sprintf("faults[%d]", first)
	for _, key := range []string{"healthy_unaffected", "cost_amplification_max"} {
		if (key == "healthy_unaffected" && (e.HealthyUnaffected == nil || !e.HealthyUnaffected.Enabled())) ||
			(key == "cost_amplification_max" && e.CostAmplificationMax == nil) {
			continue
		}
		errs = append(errs, s.at("expectations."+key, fmt.Errorf("cannot be observed: it compares the client requests before the first fault with those during the faults, and %s (%s) starts with the replay (at: 0s): no request comes before it; start it later (at:), or remove %s",
			p, s.lineText(p), key)))
	}
	return errs
}

// nowhereToFailOver refuses the failover expectations when the scenario
// serves fewer than two upstreams: the gateway has no second upstream the
// harness could see it fail over to.
func (s *Scenario) nowhereToFailOver() rehearse.ConfigErrors {
	e := s.Expectations
	if e == nil || len(s.Upstreams) >= 2 {
		return nil
	}
	var errs rehearse.ConfigErrors
	for _, key := range []string{"fails_over_within", "fails_back_within"} {
		if (key == "fails_over_within" && e.FailsOverWithin == nil) || (key == "fails_back_within" && e.FailsBackWithin == nil) {
			continue
		}
		errs = append(errs, s.at("expectations."+key, fmt.Errorf("cannot be observed: a failover moves a route's requests to a second upstream, and this scenario serves %d (upstreams:): add the fallback the gateway fails over to as an upstream, or remove %s",
			len(s.Upstreams), key)))
	}
	return errs
}
