package observe

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/testutil"
	"github.com/halfopen/rehearse/journal"
)

func TestCanaryCheck(t *testing.T) {
	var gotHeader string
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		gotHeader = r.Header.Get("X-Health-Token")
		w.Write([]byte(`{"status":"ok",` + "\n\t" + `"checks":{"search":"up"}}`))
	})
	mux.HandleFunc("/sick", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"status":"degraded","checks":{"search":"breaker open"}}`))
	})
	mux.HandleFunc("/quota", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTooManyRequests)
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/healthz", http.StatusFound)
	})
	mux.HandleFunc("/long", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(strings.Repeat("é", 10_000))) // 2 bytes per rune
	})
	mux.HandleFunc("/cut", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		w.Write([]byte("partial"))
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	})
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	})
	base := serve(t, mux)
	refused := "http://" + testutil.FreeAddr(t) + "/healthz"

	tests := []struct {
		name        string
		cfg         HealthConfig
		wantHealthy bool
		wantStatus  int
		wantDetail  string
		wantErr     string
	}{
		{name: "healthy", cfg: HealthConfig{URL: base + "/healthz", Headers: HeaderMap{"X-Health-Token": "t0ken"}},
			wantHealthy: true, wantStatus: 200, wantDetail: `{"status":"ok", "checks":{"search":"up"}}`},
		{name: "503", cfg: HealthConfig{URL: base + "/sick"}, wantStatus: 503,
			wantDetail: `{"status":"degraded","checks":{"search":"breaker open"}}`},
		{name: "429 counted healthy", cfg: HealthConfig{URL: base + "/quota", HealthyStatus: []string{"2xx", "429"}}, wantHealthy: true, wantStatus: 429},
		{name: "429 by default", cfg: HealthConfig{URL: base + "/quota"}, wantStatus: 429},
		{name: "redirect not followed", cfg: HealthConfig{URL: base + "/redirect"}, wantStatus: 302, wantDetail: `<a href="/healthz">Found</a>.`},
		{name: "refused", cfg: HealthConfig{URL: refused}, wantErr: "connection refused"},
		{name: "timeout", cfg: HealthConfig{URL: base + "/hang", Timeout: rehearse.Duration(50 * time.Millisecond)}, wantErr: "timed out"},
		{name: "body cut", cfg: HealthConfig{URL: base + "/cut"}, wantStatus: 200, wantDetail: "partial", wantErr: "reading body: unexpected EOF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewCanary(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			s := c.Check(context.Background())
			if s.Healthy != tt.wantHealthy || s.Status != tt.wantStatus || s.Detail != tt.wantDetail {
				t.Errorf("got healthy=%v status=%d detail=%q, want %v %d %q", s.Healthy, s.Status, s.Detail, tt.wantHealthy, tt.wantStatus, tt.wantDetail)
			}
			if (tt.wantErr == "") != (s.Error == "") || !strings.Contains(s.Error, tt.wantErr) {
				t.Errorf("error %q, want %q", s.Error, tt.wantErr)
			}
			if s.URL != tt.cfg.URL {
				t.Errorf("url %q", s.URL)
			}
			if s.Latency <= 0 && s.Status != 0 {
				t.Errorf("latency %v", s.Latency)
			}
		})
	}
	if gotHeader != "t0ken" {
		t.Errorf("configured header not sent: %q", gotHeader)
	}

	c, err := NewCanary(HealthConfig{URL: base + "/long"})
	if err != nil {
		t.Fatal(err)
	}
	s := c.Check(context.Background())
	if len(s.Detail) > MaxHealthDetail+len("…") || !utf8.ValidString(s.Detail) || !strings.HasSuffix(s.Detail, "…") {
		t.Errorf("long detail: %d bytes, valid=%v, %q…", len(s.Detail), utf8.ValidString(s.Detail), s.Detail[:20])
	}
}

func TestCanaryRun(t *testing.T) {
	healthy := make(chan bool, 1)
	healthy <- true
	url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ok := <-healthy
		healthy <- ok
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})) + "/healthz"
	clock := journal.NewClock(time.Now())
	rec := newSignalRecorder(clock)
	tick := newManualTicker()
	c, err := NewCanary(HealthConfig{URL: url}, WithRecorder(rec), WithClock(clock), tick.option())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	want := []bool{true, false, false, true}
	for i, w := range want {
		if i > 0 {
			<-healthy
			healthy <- w
			tick.C <- time.Now()
		}
		s := rec.next(t).(*journal.HealthSample)
		if s.Healthy != w {
			t.Fatalf("check %d healthy=%v, want %v (%+v)", i, s.Healthy, w, s)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	<-tick.stopped
	if n := len(rec.Events()); n != len(want) {
		t.Errorf("%d events, want %d", n, len(want))
	}
}
