package inject

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/reports/analysis"
)

// TestHangUpAfterContentIsDelivered: a gateway that has read every
// content event of a provider stream and its usage may close the
// connection before the stream's end marker ("data: [DONE]",
// message_stop) arrives — an agent runtime that stops reading at the
// usage chunk does. The fake must journal what it wrote (the marker not
// counted) and that the content was delivered, and the analysis must not
// count a give-up; a gateway that closes after the first content event
// did give up. Both paths (fast and net/http), both provider APIs, over
// a real socket. Before Delivered, such a call was client_gone with the
// marker's bytes counted, and the analysis counted a give-up.
func TestHangUpAfterContentIsDelivered(t *testing.T) {
	cases := []struct {
		api, path string
		last      string // a string only the last content event holds
		first     string // a string of the first content event
		terminal  []byte
	}{
		{APIOpenAI, "/v1/chat/completions", `"choices":[],"usage":`, `"content":"token0 "`, streamTerminal(APIOpenAI)},
		{APIAnthropic, "/v1/messages", "event: message_delta", `"text":"token0 "`, streamTerminal(APIAnthropic)},
	}
	for _, tc := range cases {
		// "latency": the full path behind a fault that passes the
		// healthy answer through unaltered.
		for _, path := range []string{"fast", "full", "latency"} {
			for _, early := range []bool{false, true} {
				name := fmt.Sprintf("%s-%s-after-%s", tc.api, path, map[bool]string{false: "content", true: "first-event"}[early])
				t.Run(name, func(t *testing.T) {
					cfg := UpstreamConfig{Name: "llm", API: tc.api, Healthy: &HealthyConfig{SSE: &SSEConfig{
						Events: 1, Interval: rehearse.Duration(150 * time.Millisecond)}}}
					var faults []FaultSpec
					if path == "latency" {
						faults = []FaultSpec{{Type: "latency", Upstream: "llm", Params: &LatencyParams{LatencyConfig{Fixed: rehearse.Duration(10 * time.Millisecond)}}}}
					}
					fakeFastPathOff = path == "full"
					s, mem := startServer(t, []UpstreamConfig{cfg}, faults)
					fakeFastPathOff = false
					if path != "latency" && (s.byName["llm"].fake != nil) != (path == "fast") {
						t.Fatalf("the %s path does not serve the fake", path)
					}
					until := tc.last
					if early {
						until = tc.first
					}
					got := readStreamThenClose(t, s.Addr("llm"), tc.path, until)
					ev := awaitUpstreamEvent(t, mem)
					h := &fakeHandler{cfg: *s.byName["llm"].cfg.Healthy, api: tc.api}
					var full int64
					// "created" is now's second: as many digits as the fake's.
					for _, e := range h.sseEvents(tc.path, time.Now().Unix()) {
						full += int64(len(e))
					}
					if ev.Outcome != journal.OutcomeUpstreamGone || (path == "latency") != (ev.Fault != "") {
						t.Fatalf("outcome %q, want client_gone (the client closed before the end marker); read %q", ev.Outcome, got)
					}
					if early {
						if ev.Delivered || ev.Bytes >= full-int64(len(tc.terminal)) {
							t.Errorf("closed after the first event: delivered %v, %d bytes of %d; want not delivered, fewer", ev.Delivered, ev.Bytes, full)
						}
					} else if !ev.Delivered || ev.Bytes != full-int64(len(tc.terminal)) {
						t.Errorf("closed after the content: delivered %v, %d bytes; want delivered, %d (all but the %d-byte end marker)",
							ev.Delivered, ev.Bytes, full-int64(len(tc.terminal)), len(tc.terminal))
					}
					a, err := analysis.AnalyzeEvents(mem.Events())
					if err != nil {
						t.Fatal(err)
					}
					want := int64(0)
					if early {
						want = 1
					}
					if a.GiveUps == nil || a.GiveUps.Count != want {
						t.Errorf("give-ups %+v, want %d", a.GiveUps, want)
					}
				})
			}
		}
	}
}

// readStreamThenClose sends a streaming chat request on a connection of
// its own, reads the answer until an event holding until has arrived
// whole, and closes the connection; it returns what it read.
func readStreamThenClose(t *testing.T, addr, path, until string) []byte {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: llm\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", path, len(body), body)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	var got []byte
	buf := make([]byte, 4096)
	for {
		n, err := br.Read(buf)
		got = append(got, buf[:n]...)
		if i := bytes.Index(got, []byte(until)); i >= 0 && bytes.Contains(got[i:], []byte("\n\n")) {
			return got
		}
		if err != nil {
			t.Fatalf("read %q, then %v, before %q", got, err, until)
		}
	}
}

// awaitUpstreamEvent waits for the first upstream.request of mem.
func awaitUpstreamEvent(t *testing.T, mem *journal.Memory) *journal.UpstreamRequest {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if evs := upstreamEvents(mem); len(evs) > 0 {
			return evs[0]
		}
	}
	t.Fatal("no upstream.request recorded")
	return nil
}

// TestHandlerOutcome: the full path's outcome of an exchange no fault
// ended. A gateway that closes the moment it has read the whole answer
// cancels the request's context before the handler's outcome is read
// (a race a loaded machine loses: the stall drill's 2270-byte
// client_gone calls); the answer was written whole: completed.
func TestHandlerOutcome(t *testing.T) {
	werr := errors.New("write: broken pipe")
	cases := []struct {
		werr   error
		wrote  wroteState
		ctxErr error
		want   journal.Outcome
	}{
		{nil, wroteAll, context.Canceled, journal.OutcomeUpstreamComplete},
		{nil, wroteAll, nil, journal.OutcomeUpstreamComplete},
		{nil, wroteContent, context.Canceled, journal.OutcomeUpstreamGone},
		{nil, wroteNone, context.Canceled, journal.OutcomeUpstreamGone},
		{werr, wroteContent, nil, journal.OutcomeUpstreamGone},
		{werr, wroteAll, nil, journal.OutcomeUpstreamGone},
		{nil, wroteNone, nil, journal.OutcomeUpstreamComplete}, // a proxied answer
	}
	for _, c := range cases {
		if got := handlerOutcome(c.werr, c.wrote, c.ctxErr); got != c.want {
			t.Errorf("handlerOutcome(%v, %d, %v) = %s, want %s", c.werr, c.wrote, c.ctxErr, got, c.want)
		}
	}
}
