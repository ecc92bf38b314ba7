package rehearsal

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"go.yaml.in/yaml/v3"

	"github.com/halfopen/rehearse/inject"
	"github.com/halfopen/rehearse/internal/redact"
	"github.com/halfopen/rehearse/replay"
	"github.com/halfopen/rehearse/reports/num"
)

// WriteText prints the plan for a person, as rehearse run --dry-run shows
// it: the capture (what will be replayed and what was set aside, and why),
// the replay, the gateway, the upstreams and their addresses, the fault
// timeline and the expectations. Credentials in URLs are redacted.
func (p *Plan) WriteText(w io.Writer) error {
	sc := p.Scenario
	ew := &errWriter{w: w}
	src := sc.File
	if src == "" {
		src = "built-in drill " + sc.Builtin
	}
	ew.printf("plan: %s (%s)\n", sc.Name, src)

	st := p.Stats
	ew.printf("\ncapture %s (%s): %d replayable requests", p.Capture, st.Format, p.Replayable)
	if p.Writes > 0 {
		ew.printf(" (%d writes)", p.Writes)
	}
	ew.printf(", %s apart from first to last, from %d packets in %d TCP streams\n",
		num.Sec(p.Span.Seconds()), st.Packets, st.Streams)
	var hosts []string
	for _, h := range p.sortedHosts() {
		name := h
		if name == "" {
			name = "(no Host)"
		}
		hosts = append(hosts, fmt.Sprintf("%s %d", name, p.Hosts[h]))
	}
	ew.printf("  hosts: %s\n", strings.Join(hosts, ", "))
	skipped := p.Skipped()
	if len(skipped) == 0 {
		ew.printf("  skipped: nothing\n")
	}
	for _, s := range skipped {
		ew.printf("  skipped: %s\n", s)
	}

	r := sc.Replay
	shape := "looped"
	if r.Once {
		shape = "once"
	}
	ew.printf("\nreplay: %s for %s (the capture %s), deadline %s per request, at most %d in flight\n",
		timing(r.Timing, r.Rate, r.Speed, r.Schedule, *sc.Seed), r.Duration, shape, r.Deadline, r.MaxInFlight)
	if len(r.KeepHeaders) > 0 {
		ew.printf("  response headers kept in the journal: %s\n", strings.Join(r.KeepHeaders, ", "))
	}
	if w := r.Warmup; w != nil {
		rate := w.Rate
		if rate == 0 {
			rate = r.Rate
		}
		how := timing(r.Timing, rate, r.Speed, r.Schedule, *sc.Seed)
		if w.Rate > 0 && r.Timing == replay.TimingOriginal {
			how = timing(replay.TimingRate, rate, 0, "", 0)
		}
		ew.printf("  warm-up first: %s for %s before time zero, no fault, not scored\n", how, w.Duration)
	}

	target := planTarget(sc).String()
	// A built-in gateway on a free port has no address yet: its URLs are
	// shown on a placeholder.
	shown := func(u string) string { return redactURL(u) }
	if sc.Gateway.Builtin != nil && strings.HasSuffix(target, ":0") {
		shown = func(u string) string { return strings.Replace(redactURL(u), target, "http://<gateway>", 1) }
	}
	if b := sc.Gateway.Builtin; b != nil {
		mode := b.Config.Mode
		if mode == "" {
			mode = "reference"
		}
		ew.printf("\ngateway: built-in (%s mode), %d instance(s) on %s", mode, b.Instances, listenText(sc.GatewayListen()))
		switch b.Redis {
		case "":
		case "auto":
			ew.printf(", coordinated through a redis-server the run starts on a free port")
		default:
			ew.printf(", coordinated through Redis at %s", redactURL(b.Redis))
		}
		if b.Instances > 1 {
			ew.printf(", behind a round-robin front")
		}
		ew.printf("\n")
	} else {
		ew.printf("\ngateway: %s (under test)\n", redactURL(sc.Gateway.URL))
	}
	ready := sc.ReadyCheck(target)
	ew.printf("  ready: %s answering within %s\n", shown(ready.URL), ready.Timeout)
	if h := sc.HealthConfig(target); h != nil {
		ew.printf("  health canary: %s\n", shown(h.URL))
	}
	var instances []string
	if sc.Gateway.Builtin != nil {
		instances = []string{target}
	}
	for _, m := range sc.ScrapeConfigs(instances) {
		what := m.URL
		if m.PromQuery != nil {
			what = "Prometheus query at " + m.PromQuery.URL
		}
		preset := m.Preset
		if preset == "" && m.Custom != nil {
			preset = "custom"
		}
		ew.printf("  metrics: %s (preset %s)\n", shown(what), preset)
	}

	ew.printf("\nupstreams:\n")
	tw := tabwriter.NewWriter(ew, 2, 8, 2, ' ', 0)
	for _, u := range sc.Upstreams {
		mode := u.Mode
		if mode == "" {
			mode = inject.ModeFake
		}
		line := fmt.Sprintf("  %s\t%s\t%s", u.Name, mode, listenText(u.Listen))
		switch b := sc.Gateway.Builtin; {
		case b != nil && b.Redis == "auto" && u.Name == b.RedisUpstream:
			line += "\t→ the run's redis-server"
		case u.Target != "":
			line += "\t→ " + redactURL(u.Target)
		}
		fmt.Fprintln(tw, line)
	}
	_ = tw.Flush()

	if len(sc.Faults) == 0 {
		ew.printf("\nfaults: none\n")
	} else {
		ew.printf("\nfaults (times from the start of the replay):\n")
		tw = tabwriter.NewWriter(ew, 2, 8, 2, ' ', 0)
		fmt.Fprintf(tw, "  start\tend\tupstream\tkind\tname\tparams\n")
		for _, f := range sc.Faults {
			end := "end of run"
			if f.For.D() > 0 {
				end = (f.At.D() + f.For.D()).String()
			}
			name := f.Name
			if name == "" {
				name = "-" // named <upstream>-<type> when the run adds it
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", f.At.D(), end, f.Upstream, f.Type, name, faultParams(f))
		}
		_ = tw.Flush()
	}

	if e := sc.Expectations; e == nil || e.IsZero() {
		ew.printf("\nexpectations: none (a completed run exits 0)\n")
	} else {
		var buf strings.Builder
		enc := yaml.NewEncoder(&buf)
		enc.SetIndent(2)
		if err := enc.Encode(e); err != nil {
			return err
		}
		b := buf.String()
		ew.printf("\nexpectations:\n")
		for _, line := range strings.Split(strings.TrimRight(b, "\n"), "\n") {
			ew.printf("  %s\n", line)
		}
	}
	return ew.err
}

// Skipped lists what the capture held that will not be replayed, each
// with its count and reason ("3 TLS streams (capture in front of TLS
// termination, or plaintext upstream traffic)"); the streams that are not
// HTTP/1.x in the capture reader's words (capture.Stats.NotHTTPStreams).
func (p *Plan) Skipped() []string {
	st := p.Stats
	out := st.NotHTTPStreams()
	add := func(n int64, what string) {
		if n > 0 {
			out = append(out, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(st.Incomplete, "incomplete requests (gaps, cut packets or the capture's end)")
	if st.Filtered > 0 {
		add(st.Filtered, "requests filtered out by replay.filter ("+describeFilter(p.Scenario.Replay.Filter)+")")
	}
	for why, n := range p.Unsendable {
		add(int64(n), "requests net/http cannot send as captured: "+why)
	}
	return out
}

// timing says how the requests are paced; a random schedule names itself
// and its seed (the fixed grid, the default, is just the rate).
func timing(mode string, rate, speed float64, schedule string, seed int64) string {
	switch {
	case mode == "original":
		return fmt.Sprintf("the capture's own spacing ÷ %g", speed)
	case schedule != "" && schedule != replay.ScheduleFixed:
		return fmt.Sprintf("%g req/s on a %s schedule (seed %d)", rate, schedule, seed)
	}
	return fmt.Sprintf("%g req/s", rate)
}

// listenText says what a listen address means: port 0 is a free port
// picked when the run starts.
func listenText(addr string) string {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	if strings.HasSuffix(addr, ":0") {
		return addr + " (a free port, picked at start)"
	}
	return addr
}

// faultParams renders a fault's parameters and targeting compactly.
func faultParams(f inject.FaultSpec) string {
	var parts []string
	if f.Params != nil {
		if b, err := json.Marshal(f.Params); err == nil && string(b) != "{}" && string(b) != "null" {
			parts = append(parts, string(b))
		}
	}
	if f.Probability > 0 && f.Probability < 1 {
		parts = append(parts, fmt.Sprintf("probability %g", f.Probability))
	}
	if f.FirstN > 0 {
		parts = append(parts, fmt.Sprintf("first %d", f.FirstN))
	}
	if f.EveryNth > 0 {
		parts = append(parts, fmt.Sprintf("every %dth", f.EveryNth))
	}
	if f.Match != nil {
		if b, err := json.Marshal(f.Match); err == nil {
			parts = append(parts, "match "+string(b))
		}
	}
	if f.HealthChecks {
		parts = append(parts, "health checks too")
	}
	if len(parts) == 0 {
		return "defaults"
	}
	return strings.Join(parts, " ")
}

// redactURL hides a URL's user info and credential-like query values, by
// the one rule of everything rehearse writes (internal/redact).
func redactURL(raw string) string { return redact.URL(raw) }

// errWriter keeps the first write error, so that printing can go on
// unchecked and the error is returned once.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(b []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(b)
	e.err = err
	return n, err
}

func (e *errWriter) printf(format string, args ...any) { _, _ = fmt.Fprintf(e, format, args...) }
