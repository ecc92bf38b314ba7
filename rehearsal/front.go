package rehearsal

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync/atomic"

	"github.com/halfopen/rehearse"
)

// startFront serves a round-robin reverse proxy over several built-in
// gateway instances, standing in for the load balancer in front of a
// fleet. It streams (no response buffering) so SSE passes through.
func startFront(backends []string) (*http.Server, string, error) {
	targets := make([]*url.URL, len(backends))
	for i, b := range backends {
		u, err := url.Parse(b)
		if err != nil {
			return nil, "", err
		}
		targets[i] = u
	}
	var next atomic.Uint64
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			t := targets[(next.Add(1)-1)%uint64(len(targets))]
			r.SetURL(t)
			r.Out.Host = r.In.Host
		},
		FlushInterval: -1,
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", fmt.Errorf("%w: fleet front: %w", rehearse.ErrEnvironment, err)
	}
	// Full duplex: net/http's HTTP/1 server otherwise consumes and closes
	// the request body as soon as the response starts, while the proxy's
	// transport may still be forwarding it (or making its final check
	// that nothing follows the declared length). The transport then fails
	// the request and closes the gateway connection under the response:
	// the client gets a 200 cut after its header although the gateway
	// answered in full. A load balancer streams both ways at once.
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).EnableFullDuplex()
		proxy.ServeHTTP(w, r)
	})
	srv := &http.Server{Handler: handler}
	go func() { _ = srv.Serve(ln) }()
	return srv, "http://" + ln.Addr().String(), nil
}
