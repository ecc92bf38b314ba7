package rehearsal

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse/internal/testutil"
)

// retryingGateway forwards each request to the upstream and retries a
// 503 up to 3 times: after fixed 1, 2 and 4 s waits (the second AI
// gateway of issue 28), or, with tick, at the next whole second of its
// clock (every pending retry released together).
func retryingGateway(t *testing.T, upstream string, tick bool) string {
	t.Helper()
	waits := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}
	client := &http.Client{Timeout: 5 * time.Second}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		for n := 0; ; n++ {
			req, _ := http.NewRequestWithContext(r.Context(), r.Method, "http://"+upstream+r.URL.RequestURI(), bytes.NewReader(body))
			req.Header = r.Header.Clone()
			resp, err := client.Do(req)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			if resp.StatusCode != http.StatusServiceUnavailable || n == len(waits) {
				w.WriteHeader(resp.StatusCode)
				_, _ = io.Copy(w, resp.Body)
				resp.Body.Close()
				return
			}
			resp.Body.Close()
			wait := waits[n]
			if tick {
				now := time.Now()
				wait = now.Truncate(time.Second).Add(time.Second).Sub(now)
			}
			select {
			case <-time.After(wait):
			case <-r.Context().Done():
				return
			}
		}
	})
	return testutil.Serve(t, &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second})
}

// TestLockstepOnTheSendGrid: 5 req/s on the fixed grid (200 ms apart)
// into a gateway retrying 503s after fixed 1, 2 and 4 s: its retries
// meet other requests' retries because the waits are multiples of the
// send spacing, and read not in lockstep against the send schedule
// (issue 28: "94 % lockstep"). The same traffic into a gateway that
// releases its retries together at each whole second reads lockstep.
func TestLockstepOnTheSendGrid(t *testing.T) {
	if testing.Short() {
		t.Skip("two runs of 13 s")
	}
	for _, tc := range []struct {
		name     string
		tick     bool
		lockstep bool
	}{{"fixed-waits", false, false}, {"released-together", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			up := testutil.FreeAddr(t)
			gw := retryingGateway(t, up, tc.tick)
			sc := parse(t, `
name: `+tc.name+`
gateway:
  url: http://`+gw+`
upstreams: [{name: search, listen: "`+up+`"}]
replay:
  rate: 5
  duration: 6s
  deadline: 15s
  filter: {path: ^/tools/search}
faults:
  - {name: storm, type: status, upstream: search, at: 0s, for: 6s, params: {code: 503}}
`)
			res, err := Run(context.Background(), sc, Options{OutDir: filepath.Join(t.TempDir(), "run")})
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			f := res.Analysis.Resilience.Upstreams["search"]
			if f == nil {
				t.Fatal("no retry figures for search")
			}
			l := f.Lockstep
			t.Logf("%d retries: %.0f%% within 10 ms of another request's, %.0f%% if independent, %.0f%% from the send schedule; %d pairs against %.1f",
				l.Retries, *l.CoincidentShare*100, *l.IndependentShare*100, *l.ScheduleShare*100, *l.Pairs, *l.SchedulePairs)
			if l.Lockstep == nil || l.Basis != "schedule" || l.Retries < 50 {
				t.Fatalf("lockstep %+v: want a verdict against the schedule on at least 50 retries", l)
			}
			if *l.Lockstep != tc.lockstep {
				t.Errorf("lockstep %v, want %v: %.0f%% coincide, the schedule gives %.0f%% (%d pairs against %.1f)",
					*l.Lockstep, tc.lockstep, *l.CoincidentShare*100, *l.ScheduleShare*100, *l.Pairs, *l.SchedulePairs)
			}
			joined := strings.Join(res.Analysis.Resilience.Statements, "\n")
			if tc.lockstep && !strings.Contains(joined, "retries in lockstep") {
				t.Errorf("statements:\n%s", joined)
			}
		})
	}
}
