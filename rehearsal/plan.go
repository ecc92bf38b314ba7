package rehearsal

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/replay"
	"github.com/halfopen/rehearse/replay/capture"
	"github.com/halfopen/rehearse/scenarios"
)

// Plan is what a run of a scenario would replay, worked out without
// sending anything or creating anything: the capture read with the
// scenario's filter and rewrite, and the requests the replayer accepts of
// it. rehearse validate, run --dry-run and Run itself get it from Check,
// so the three agree on what a capture holds.
type Plan struct {
	// Scenario is the scenario checked.
	Scenario *scenarios.Scenario
	// Capture names the capture as the scenario gives it (a path or
	// builtin:NAME).
	Capture string
	// Stats is what the capture reader saw.
	Stats *capture.Stats
	// Replayable is the number of requests the replayer will send (in
	// a loop, or once); Writes how many of them are POST, PUT, PATCH or
	// DELETE.
	Replayable int
	Writes     int
	// Hosts counts the replayable requests by captured Host header ("" for
	// none).
	Hosts map[string]int
	// Span is the time from the first to the last replayable request in
	// the capture.
	Span time.Duration
	// Unsendable counts, by reason, the complete requests net/http cannot
	// send as captured.
	Unsendable map[string]int

	// corpus holds the requests compressed (capture.Corpus): a capture
	// of a million requests is held in tens of megabytes, not the
	// gigabyte its *capture.Request values took.
	corpus *capture.Corpus
}

// Check reads the scenario's capture as Run would and refuses, with the
// reason in words, a capture Run could not replay: unreadable (not a pcap
// or pcapng file, truncated, corrupt), or holding no request the replayer
// would send (TLS, HTTP/2 or other protocols only, everything filtered out
// or incomplete, writes refused), and a plan that can only fail
// (scenarios.CheckObservable: an expectation the run cannot observe,
// upstreams an external gateway cannot be pointed at), and a listen
// address beyond loopback without sc.AllowRemote. Every refusal is
// invalid input (exit code 2), placed at the scenario key it comes from.
// Check sends nothing and creates nothing. It is the one check of every
// command that runs a scenario or schedules one: validate, run (before
// anything starts), run --dry-run, and launchd and systemd print and
// install.
func Check(ctx context.Context, sc *scenarios.Scenario) (*Plan, error) {
	// Before the capture is read: what would listen beyond loopback
	// needs the command line's consent (sc.AllowRemote).
	if err := sc.CheckListeners(); err != nil {
		return nil, err
	}
	opt, err := sc.CaptureOptions()
	if err != nil {
		return nil, err
	}
	rc, name, err := sc.OpenCapture()
	if err != nil {
		return nil, sc.ErrorAt("replay.capture", err)
	}
	defer rc.Close()
	p := &Plan{Scenario: sc, Capture: sc.Replay.Capture, Hosts: map[string]int{}}
	corpus := &capture.Corpus{}
	var first, last time.Time
	stats, err := capture.Extract(ctx, rc, opt, func(q *capture.Request) error {
		corpus.Append(q)
		if q.Incomplete {
			return nil
		}
		p.Hosts[q.Host]++
		if isWrite(q.Method) {
			p.Writes++
		}
		if first.IsZero() || q.Time.Before(first) {
			first = q.Time
		}
		if q.Time.After(last) {
			last = q.Time
		}
		return nil
	})
	corpus.Done()
	p.Stats = stats
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: reading capture %s: %w", rehearse.ErrInterrupted, name, ctx.Err())
		}
		return nil, sc.ErrorAt("replay.capture", fmt.Errorf("capture %s: %s", name, readProblem(err, stats)))
	}
	if corpus.Len() == 0 {
		key := "replay.capture"
		if stats.Filtered > 0 && stats.Filtered == stats.Requests-stats.Incomplete {
			key = "replay.filter"
		}
		return nil, sc.ErrorAt(key, fmt.Errorf("capture %s: 0 replayable requests: %s", name, nothingWhy(sc, stats)))
	}
	// The replayer's own checks (incomplete requests, writes, targets
	// net/http cannot send), with a stand-in target: the real one is known
	// only once the gateway listens, and no check depends on it.
	rp, err := replay.NewFrom(corpus, sc.ReplayOptions(planTarget(sc), "check"))
	if err != nil {
		key := "replay"
		if errors.Is(err, replay.ErrWritesRefused) {
			key = "replay.allow_writes"
		}
		return nil, sc.ErrorAt(key, fmt.Errorf("capture %s: %w", name, err))
	}
	p.Replayable = rp.Corpus()
	p.Unsendable = rp.Unsendable()
	p.corpus = corpus
	p.Span = last.Sub(first)
	// Last, with the capture's size known (a replay.once run lasts as
	// long as its requests take): expectations the run could not observe,
	// upstreams the gateway could not be pointed at.
	if err := sc.CheckObservable(p.Replayable, p.Span); err != nil {
		return nil, err
	}
	return p, nil
}

// planTarget is a stand-in for the gateway's URL while checking: the URL
// itself for a gateway under test, the built-in gateway's listen address
// otherwise.
func planTarget(sc *scenarios.Scenario) *url.URL {
	if sc.Gateway.Builtin == nil {
		if u, err := url.Parse(sc.Gateway.URL); err == nil && u.Host != "" {
			return u
		}
	}
	return &url.URL{Scheme: "http", Host: sc.GatewayListen()}
}

func isWrite(method string) bool {
	switch strings.ToUpper(method) {
	case "POST", "PUT", "PATCH", "DELETE":
		return true
	}
	return false
}

// readProblem says in words why a capture could not be read: the format,
// or where it ends.
func readProblem(err error, st *capture.Stats) string {
	ce, ok := errors.AsType[*capture.Error](err)
	if !ok {
		return err.Error()
	}
	cause := strings.TrimPrefix(ce.Err.Error(), capture.ErrTruncated.Error()+": ")
	switch {
	case ce.Packet == 0:
		return ce.Err.Error()
	case errors.Is(ce.Err, capture.ErrTruncated):
		return fmt.Sprintf("truncated at packet %d: %s; %d packets read before it", ce.Packet, cause, st.Packets)
	default:
		return fmt.Sprintf("packet %d: %v; %d packets read before it", ce.Packet, ce.Err, st.Packets)
	}
}

// nothingWhy says why a capture that was read whole gave no request to
// replay: what its streams were, and what the scenario's filter or the
// reader set aside.
func nothingWhy(sc *scenarios.Scenario, st *capture.Stats) string {
	// What is not HTTP/1.x is worded by the capture reader, as in its
	// summary; what the scenario set aside is worded here.
	parts := st.NotHTTP()
	if st.Incomplete > 0 {
		why := ""
		if st.Cut > 0 {
			why = fmt.Sprintf(" (%d packets cut by the snap length: capture with tcpdump -s 0)", st.Cut)
		}
		parts = append(parts, fmt.Sprintf("%d incomplete %s%s", st.Incomplete, plural(st.Incomplete, "request", "requests"), why))
	}
	if st.Filtered > 0 {
		parts = append(parts, fmt.Sprintf("%d %s filtered out by replay.filter (%s)",
			st.Filtered, plural(st.Filtered, "request", "requests"), describeFilter(sc.Replay.Filter)))
	}
	if len(parts) == 0 {
		parts = append(parts, fmt.Sprintf("%d packets, %d TCP streams, no HTTP/1.x request", st.Packets, st.Streams))
	}
	return strings.Join(parts, "; ")
}

// describeFilter renders the scenario's filter, for messages.
func describeFilter(f *scenarios.FilterSpec) string {
	if f == nil {
		return "none"
	}
	var parts []string
	if len(f.Methods) > 0 {
		parts = append(parts, "methods "+strings.Join(f.Methods, ","))
	}
	if f.Host != "" {
		parts = append(parts, "host "+f.Host)
	}
	if f.Port != 0 {
		parts = append(parts, fmt.Sprintf("port %d", f.Port))
	}
	if f.Path != "" {
		parts = append(parts, "path ~ "+f.Path)
	}
	return strings.Join(parts, ", ")
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// sortedHosts returns the hosts by descending count, then name.
func (p *Plan) sortedHosts() []string {
	hosts := make([]string, 0, len(p.Hosts))
	for h := range p.Hosts {
		hosts = append(hosts, h)
	}
	sort.Slice(hosts, func(i, j int) bool {
		if p.Hosts[hosts[i]] != p.Hosts[hosts[j]] {
			return p.Hosts[hosts[i]] > p.Hosts[hosts[j]]
		}
		return hosts[i] < hosts[j]
	})
	return hosts
}
