package inject

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/halfopen/rehearse/journal"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// startServer starts a server on loopback and closes it at the end of the
// test. It returns the journal the server records to.
func startServer(t testing.TB, ups []UpstreamConfig, faults []FaultSpec, opts ...Option) (*Server, *journal.Memory) {
	t.Helper()
	clock := journal.NewClock(time.Now())
	mem := journal.NewMemory(clock)
	opts = append([]Option{WithRecorder(mem), WithClock(clock), WithLogger(slog.New(slog.DiscardHandler))}, opts...)
	s, err := New(ups, faults, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, mem
}

// newClient returns a client that opens a fresh connection per request, so
// that a fault on one connection cannot be hidden by a retry on another.
func newClient(timeout time.Duration) *http.Client {
	return &http.Client{Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil}, Timeout: timeout}
}

// upstreamEvents returns the upstream.request events recorded.
func upstreamEvents(mem *journal.Memory) []*journal.UpstreamRequest {
	var out []*journal.UpstreamRequest
	for _, p := range mem.OfKind(journal.KindUpstreamRequest) {
		out = append(out, p.(*journal.UpstreamRequest))
	}
	return out
}

// get issues a GET and reads the whole body; it returns the response (nil
// on a transport error), the body bytes read and the first error.
func get(t *testing.T, c *http.Client, url string, hdr map[string]string) (*http.Response, []byte, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}
