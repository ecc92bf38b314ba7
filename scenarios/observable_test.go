package scenarios

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse"
)

// storm is a file scenario with a recovery expectation: search fails from
// 20 s to 80 s of a 2-minute replay.
const storm = `name: storm
replay: {duration: 2m}
faults:
  - {name: search-503, type: status, upstream: search, at: 20s, for: 60s}
expectations:
  closes_within: 30s
`

// TestObservableNamesTheDurationFlag: a --duration that ends the replay
// before the fault does is refused naming the flag, not the file's line,
// and a longer one is accepted.
func TestObservableNamesTheDurationFlag(t *testing.T) {
	s := parseT(t, storm)
	if err := s.CheckObservable(0, 0); err != nil {
		t.Fatalf("the file as written: %v", err)
	}
	if err := override(t, "duration", "80s").Apply(s); err != nil {
		t.Fatal(err)
	}
	err := s.CheckObservable(0, 0)
	if !errors.Is(err, rehearse.ErrInvalid) {
		t.Fatalf("--duration 80s (the fault ends at 80s): %v, want invalid input", err)
	}
	msg := err.Error()
	for _, want := range []string{"test.yaml:6:18: expectations.closes_within: ", "the replay ends at 1m20s (--duration 1m20s)",
		"faults[0] (search-503, line 4) ends at 1m20s", "give a longer --duration"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "replay.duration") {
		t.Errorf("message names the file's duration, not the flag:\n%s", msg)
	}

	s = parseT(t, storm)
	if err := override(t, "duration", "81s").Apply(s); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckObservable(0, 0); err != nil {
		t.Errorf("--duration 81s ends after the fault: %v", err)
	}
}

// TestObservableOnce: a replay.once run lasts as long as its requests
// take, known once the capture is read.
func TestObservableOnce(t *testing.T) {
	s := parseT(t, `replay: {once: true, rate: 10}
faults:
  - {type: status, upstream: search, at: 5s, for: 20s}
expectations:
  successes_to_close_min: 1
`)
	if err := s.CheckObservable(0, 0); err != nil {
		t.Errorf("capture not read: the once run's length is not judged: %v", err)
	}
	err := s.CheckObservable(200, 0) // 200 requests at 10/s: 20 s, the fault ends at 25 s
	if err == nil || !strings.Contains(err.Error(), "the replay ends at 20s (replay.once: one pass of 200 requests at 10 req/s)") {
		t.Errorf("200 requests: %v", err)
	}
	if err := s.CheckObservable(300, 0); err != nil {
		t.Errorf("300 requests (30 s) outlast the fault: %v", err)
	}
}

// TestObservableCoveredUpstreams: only faults on the upstreams the
// breaker expectations cover matter, and a metrics source makes
// metrics_lag_max observable.
func TestObservableCoveredUpstreams(t *testing.T) {
	src := `replay: {duration: 1m}
faults:
  - {type: status, upstream: weather, at: 10s}
  - {type: status, upstream: search, at: 10s, for: 20s}
expectations:
  upstreams: [%s]
  metrics_lag_max: 15s
`
	if err := parseT(t, strings.Replace(src, "%s", "search", 1)).CheckObservable(0, 0); err != nil {
		t.Errorf("weather is not covered: %v", err)
	}
	err := parseT(t, strings.Replace(src, "%s", "search, weather", 1)).CheckObservable(0, 0)
	if err == nil || !strings.Contains(err.Error(), "faults[0] (weather status, line 3) has no for: and lasts to the end") ||
		strings.Contains(err.Error(), "faults[1]") {
		t.Errorf("weather covered: %v", err)
	}
}

// TestObservableMetrics: metrics_lag_max needs a metrics source; the
// built-in gateway has one, and so does a --gateway that replaces it.
func TestObservableMetrics(t *testing.T) {
	const noMetrics = "gateway: {url: \"http://127.0.0.1:8080\"}\nupstreams: [{name: search, listen: \"127.0.0.1:9101\"}]\nexpectations: {metrics_lag_max: 15s}\n"
	err := parseT(t, noMetrics).CheckObservable(0, 0)
	if err == nil || !strings.Contains(err.Error(), "test.yaml:3:33: expectations.metrics_lag_max: cannot be observed") || !strings.Contains(err.Error(), "set gateway.metrics") {
		t.Errorf("no metrics: %v", err)
	}
	withMetrics := strings.Replace(noMetrics, `"http://127.0.0.1:8080"`, `"http://127.0.0.1:8080", metrics: {url: "http://127.0.0.1:8080/metrics"}`, 1)
	if err := parseT(t, withMetrics).CheckObservable(0, 0); err != nil {
		t.Errorf("with metrics: %v", err)
	}
	if err := parseT(t, "expectations: {metrics_lag_max: 15s}\n").CheckObservable(0, 0); err != nil {
		t.Errorf("built-in gateway: %v", err)
	}
}

// TestRandomPorts: an external gateway needs every upstream on a fixed
// port, whatever the host is written as; the built-in gateway is wired by
// the harness and takes free ports.
func TestRandomPorts(t *testing.T) {
	for listen, refused := range map[string]bool{
		"":                false,
		"127.0.0.1:0":     true,
		"localhost:0":     true,
		"[::1]:0":         true,
		":0":              true,
		"127.0.0.1:9101":  false,
		"0.0.0.0:9101":    false,
		"[::1]:9101":      false,
		"localhost:19101": false,
	} {
		up := "{name: search}"
		if listen != "" {
			up = `{name: search, listen: "` + listen + `"}`
		} else {
			refused = true // the default is a free port
		}
		err := parseT(t, "gateway: {url: \"http://127.0.0.1:8080\"}\nupstreams: ["+up+"]\n").CheckObservable(0, 0)
		if (err != nil) != refused {
			t.Errorf("listen %q: %v, want refused %v", listen, err, refused)
		}
		if err != nil && !strings.Contains(err.Error(), "give it a fixed one") {
			t.Errorf("listen %q: the message gives no fix: %v", listen, err)
		}
		builtin := parseT(t, "upstreams: ["+up+"]\n")
		if err := builtin.CheckObservable(0, 0); err != nil {
			t.Errorf("built-in gateway, listen %q: %v", listen, err)
		}
	}
}

// TestRandomPortsAfterGatewayFlag: --gateway on a built-in drill names the
// flag and how to get a file to edit.
func TestRandomPortsAfterGatewayFlag(t *testing.T) {
	s, err := Builtin("503-storm")
	if err != nil {
		t.Fatal(err)
	}
	if err := override(t, "gateway", "http://user:secret@127.0.0.1:8080").Apply(s); err != nil {
		t.Fatal(err)
	}
	err = s.CheckObservable(0, 0)
	if err == nil {
		t.Fatal("an external gateway on the drill's free ports was accepted")
	}
	msg := err.Error()
	if !strings.Contains(msg, "the gateway given by --gateway is configured outside rehearse") ||
		!strings.Contains(msg, "rehearse scenarios init 503-storm") || strings.Contains(msg, "secret") {
		t.Errorf("message:\n%s", msg)
	}
}

// TestObservableNothingBeforeTheFaults: the expectations that compare the
// requests before the first fault with those during the faults need a
// first fault after the replay's start.
func TestObservableNothingBeforeTheFaults(t *testing.T) {
	for _, tc := range []struct {
		faults, expect string
		refused        []string
	}{
		{"[{type: status, upstream: search, for: 10s}]", "{healthy_unaffected: true, cost_amplification_max: 2}", []string{"healthy_unaffected", "cost_amplification_max"}},
		{"[{type: status, upstream: weather, at: 5s}, {type: status, upstream: search, at: 0s, for: 10s}]", "{healthy_unaffected: [vectors]}", []string{"healthy_unaffected"}},
		{"[{type: status, upstream: search, at: 1s, for: 10s}]", "{healthy_unaffected: true, cost_amplification_max: 2}", nil},
		{"[{type: status, upstream: search, for: 10s}]", "{healthy_unaffected: false, opens_within: 5s}", nil},
	} {
		err := parseT(t, "replay: {duration: 1m}\nfaults: "+tc.faults+"\nexpectations: "+tc.expect+"\n").CheckObservable(0, 0)
		if len(tc.refused) == 0 {
			if err != nil {
				t.Errorf("%s %s: %v", tc.faults, tc.expect, err)
			}
			continue
		}
		var es rehearse.ConfigErrors
		if !errors.As(err, &es) || len(es) != len(tc.refused) {
			t.Errorf("%s %s: %v, want %d errors", tc.faults, tc.expect, err, len(tc.refused))
			continue
		}
		for i, key := range tc.refused {
			if es[i].Path != "expectations."+key || !strings.Contains(es[i].Error(), "starts with the replay (at: 0s)") {
				t.Errorf("%s %s: error %d = %v, want at %s", tc.faults, tc.expect, i, es[i], key)
			}
		}
	}
}

// FuzzCheckObservable runs the plan check on whatever Parse accepts: it
// refuses only as invalid input, whatever the capture's size.
func FuzzCheckObservable(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b, uint16(200))
		}
	}
	for _, d := range Drills() {
		b, _ := DrillSource(d.Name)
		f.Add(b, uint16(0))
	}
	f.Fuzz(func(t *testing.T, data []byte, n uint16) {
		s, err := Parse("fuzz.yaml", data)
		if err != nil {
			return
		}
		if err := s.CheckObservable(int(n), time.Duration(n)*time.Second); err != nil && !errors.Is(err, rehearse.ErrInvalid) {
			t.Fatalf("CheckObservable(%d): error not ErrInvalid: %v", n, err)
		}
	})
}

// TestObservableFailover: the failover expectations need a second
// upstream to fail over to, and fails_back_within a fault that ends
// before the replay does.
func TestObservableFailover(t *testing.T) {
	one := `replay: {duration: 60s}
upstreams: [{name: primary}]
faults:
  - {type: status, upstream: primary, at: 10s, for: 20s}
expectations:
  fails_over_within: 1s
  fails_back_within: 5s
`
	err := parseT(t, one).CheckObservable(0, 0)
	if !errors.Is(err, rehearse.ErrInvalid) {
		t.Fatalf("one upstream: %v, want invalid input", err)
	}
	for _, want := range []string{"expectations.fails_over_within: cannot be observed: a failover moves a route's requests to a second upstream, and this scenario serves 1",
		"expectations.fails_back_within: cannot be observed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message lacks %q:\n%s", want, err)
		}
	}
	two := strings.Replace(one, "[{name: primary}]", "[{name: primary}, {name: backup}]", 1)
	if err := parseT(t, two).CheckObservable(0, 0); err != nil {
		t.Errorf("two upstreams: %v", err)
	}
	outlasting := strings.Replace(two, "for: 20s", "for: 60s", 1)
	err = parseT(t, outlasting).CheckObservable(0, 0)
	if err == nil || !strings.Contains(err.Error(), "expectations.fails_back_within: cannot be observed: it needs the gateway to fail back to the faulted upstream after the fault ends") ||
		strings.Contains(err.Error(), "fails_over_within") {
		t.Errorf("a fault to the replay's end: %v, want fails_back_within refused alone", err)
	}
}
