package inject

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse/journal"
)

// A gateway that builds its own upstream request forwards no sequence
// header; the upstream reads the stamp the replayer wrote into the body
// wherever the gateway put it. Fake (fast and full path) and proxy mode,
// small bodies and one larger than the fast path's buffer (an agent
// runtime's ~60 KB provider request); the header wins when both exist.
func TestSeqFromBodyStamp(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, "{}")
	}))
	defer backend.Close()
	big := strings.Repeat("You are a helpful agent with tools. ", 1700) // ~60 KB
	cases := []struct {
		name    string
		body    string
		header  string
		want    int64 // -1: no seq
		wantSrc string
	}{
		{"body only", `{"messages":[{"role":"user","content":"hi [rehearse:seq=41]"}]}`, "", 41, journal.SeqFromBody},
		{"wrapped in a big prompt", `{"messages":[{"role":"system","content":"` + big + `"},{"role":"user","content":"<turn>hi [rehearse:seq=42]</turn>"}],"tools":[]}`, "", 42, journal.SeqFromBody},
		{"earlier turns' stamps before", `{"messages":[{"role":"user","content":"a [rehearse:seq=1]"},{"role":"user","content":"b [rehearse:seq=43]"}]}`, "", 43, journal.SeqFromBody},
		{"header wins", `{"messages":[{"role":"user","content":"hi [rehearse:seq=44]"}]}`, "9", 9, journal.SeqFromHeader},
		{"none", `{"messages":[{"role":"user","content":"hi"}]}`, "", -1, ""},
	}
	for _, mode := range []string{"fake-fast", "fake-full", "proxy"} {
		t.Run(mode, func(t *testing.T) {
			cfg := UpstreamConfig{Name: "llm"}
			if mode == "proxy" {
				cfg = UpstreamConfig{Name: "llm", Mode: ModeProxy, Target: backend.URL}
			}
			fakeFastPathOff = mode == "fake-full"
			s, mem := startServer(t, []UpstreamConfig{cfg}, nil)
			fakeFastPathOff = false
			c := &http.Client{Timeout: 10 * time.Second}
			for _, tc := range cases {
				req, _ := http.NewRequest(http.MethodPost, s.URL("llm")+"/v1/chat/completions", strings.NewReader(tc.body))
				if tc.header != "" {
					req.Header.Set("X-Rehearse-Seq", tc.header)
				}
				resp, err := c.Do(req)
				if err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			evs := waitEvents(t, mem, len(cases))
			for i, tc := range cases {
				e := evs[i]
				switch {
				case tc.want < 0 && (e.Seq != nil || e.SeqFrom != ""):
					t.Errorf("%s: seq %d from %q, want none", tc.name, *e.Seq, e.SeqFrom)
				case tc.want >= 0 && (e.Seq == nil || int64(*e.Seq) != tc.want || e.SeqFrom != tc.wantSrc):
					t.Errorf("%s: event %+v, want seq %d from %s", tc.name, e, tc.want, tc.wantSrc)
				}
			}
		})
	}
}
