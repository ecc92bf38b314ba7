package rehearsal

import (
	"context"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse/internal/testutil"
)

// slowGateway is a gateway that serves one request at a time: each holds
// the only slot for service, then is proxied to the upstream at
// upstream. Offered more than 1/service requests per second, it queues.
func slowGateway(t *testing.T, upstream string, service time.Duration) string {
	t.Helper()
	u, err := url.Parse("http://" + upstream)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	slot := make(chan struct{}, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case slot <- struct{}{}:
		case <-r.Context().Done():
			http.Error(w, "client gone", http.StatusServiceUnavailable)
			return
		}
		defer func() { <-slot }()
		time.Sleep(service)
		proxy.ServeHTTP(w, r)
	})
	return testutil.Serve(t, &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second})
}

// TestSaturationNote: 10 req/s for 5 s into a gateway serving one
// request at a time. With a 150 ms service time it serves 6.7/s, queues,
// and the report says it was saturated, with the figures: client latency
// growing while the upstream's stays flat, sends outpacing answers. With
// 20 ms it keeps up and nothing is said. No fault: the window is the
// whole run.
func TestSaturationNote(t *testing.T) {
	for _, tc := range []struct {
		name      string
		service   time.Duration
		saturated bool
	}{{"saturated", 150 * time.Millisecond, true}, {"keeps-up", 20 * time.Millisecond, false}} {
		t.Run(tc.name, func(t *testing.T) {
			up := testutil.FreeAddr(t)
			gw := slowGateway(t, up, tc.service)
			sc := parse(t, `
name: `+tc.name+`
gateway:
  url: http://`+gw+`
upstreams: [{name: search, listen: "`+up+`"}]
replay:
  rate: 10
  duration: 5s
  deadline: 30s
  filter: {path: ^/tools/search}
`)
			res, err := Run(context.Background(), sc, Options{OutDir: filepath.Join(t.TempDir(), "run")})
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			s := res.Analysis.Saturation
			if s == nil {
				t.Fatalf("no saturation figures; replay %+v", res.Analysis.Replay)
			}
			notes := strings.Join(res.Analysis.Notes, "\n")
			if s.Saturated != tc.saturated {
				t.Fatalf("saturated %v, want %v: %+v", s.Saturated, tc.saturated, *s)
			}
			if !tc.saturated {
				if strings.Contains(notes, "saturated") {
					t.Errorf("notes: %s", notes)
				}
				return
			}
			// 10 offered, about 6.7 served per second: the queue grows
			// by 3.3 a second, the latency by half a second a second.
			if !s.Queueing || !s.SendsOutpacingAnswers || s.LatencyLastMs < 3*s.LatencyFirstMs || s.UpstreamLastMs == nil || *s.UpstreamLastMs > s.LatencyFirstMs {
				t.Errorf("evidence %+v (upstream %v ms)", *s, fp(s.UpstreamLastMs))
			}
			if s.AnsweredRatePerS > 8 || s.OfferedRatePerS < 9 {
				t.Errorf("offered %v/s, answered %v/s", s.OfferedRatePerS, s.AnsweredRatePerS)
			}
			if !strings.Contains(notes, "the gateway was saturated (no fault: over the whole run)") || !strings.Contains(notes, "client latency grew from") {
				t.Errorf("notes: %s", notes)
			}
		})
	}
}

func fp(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}
