package observe

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// serve runs h on a real loopback listener until the test ends and returns
// its base URL.
func serve(t testing.TB, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// fixture serves a file from testdata with a content type.
func fixture(t testing.TB, name, contentType string) http.Handler {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.Write(b)
	})
}

// manualTicker drives a Scraper's or Canary's intervals from the test:
// each send on C is one interval elapsing.
type manualTicker struct {
	C       chan time.Time
	stopped chan struct{}
}

func newManualTicker() *manualTicker {
	return &manualTicker{C: make(chan time.Time), stopped: make(chan struct{})}
}

func (m *manualTicker) option() Option {
	return func(o *options) {
		o.newTicker = func(time.Duration) (<-chan time.Time, func()) {
			return m.C, func() { close(m.stopped) }
		}
	}
}
