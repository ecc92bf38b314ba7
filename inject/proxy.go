package inject

import (
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"
)

// newProxyHandler returns a reverse proxy to target (the healthy behaviour
// of a proxy-mode upstream), built on net/http/httputil.ReverseProxy:
// bodies stream through (SSE and bodies of unknown length are flushed at
// once), and faults wrap its ResponseWriter like a fake's.
func newProxyHandler(target string) (http.Handler, func(), error) {
	t, err := url.Parse(target)
	if err != nil {
		return nil, nil, err
	}
	tr := &http.Transport{
		Proxy:                 nil, // never an environment proxy: the target is what the scenario says
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   1024,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: 0, // the gateway's deadline governs, through the request context
		// The upstream sees the gateway's Accept-Encoding, not one the
		// transport adds (and then decodes behind the gateway's back);
		// the fast path forwards the header as it is, too.
		DisableCompression: true,
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(t)
			pr.SetXForwarded()
		},
		Transport:  tr,
		BufferPool: bufferPool{},
		ModifyResponse: func(resp *http.Response) error {
			if x := ExchangeFrom(resp.Request.Context()); x != nil && resp.ContentLength >= 0 {
				x.SetBodyLength(resp.ContentLength)
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				return // the gateway hung up; recorded as client_gone
			}
			code, body := proxyError(t.Host, err)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			w.Write(body)
		},
		ErrorLog: log.New(discardWriter{}, "", 0),
	}
	// Full duplex, as the fleet front (rehearsal/front.go): net/http's
	// HTTP/1 server otherwise closes the request body when the response
	// begins, and the transport's final read of it (the check that nothing
	// follows the declared length) then fails the request and closes the
	// upstream connection under an answer already on its way.
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = http.NewResponseController(w).EnableFullDuplex()
		rp.ServeHTTP(w, r)
	})
	return h, tr.CloseIdleConnections, nil
}

// bufferPool recycles the proxy's copy buffers; without one, ReverseProxy
// allocates 32 KiB per response.
type bufferPool struct{}

var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func (bufferPool) Get() []byte  { return *copyBuffers.Get().(*[]byte) }
func (bufferPool) Put(b []byte) { copyBuffers.Put(&b) }
