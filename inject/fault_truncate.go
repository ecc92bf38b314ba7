package inject

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"

	"github.com/halfopen/rehearse/journal"
)

// TruncateParams are the params of the "truncate" fault.
type TruncateParams struct {
	// MissingBytes is how much longer the announced Content-Length is than
	// the body sent; 0 means 1.
	MissingBytes int64 `yaml:"missing_bytes,omitempty" json:"missing_bytes,omitempty"`
}

// truncateFault sends the whole healthy body under a Content-Length that
// promises MissingBytes more, then closes the connection: the client reads
// the body and then gets an unexpected EOF.
type truncateFault struct{ missing int64 }

func newTruncate(p *TruncateParams) (Fault, error) {
	if p.MissingBytes < 0 {
		return nil, fmt.Errorf("missing_bytes: must be positive, got %d", p.MissingBytes)
	}
	m := p.MissingBytes
	if m == 0 {
		m = 1
	}
	return &truncateFault{missing: m}, nil
}

func (f *truncateFault) Describe() string {
	return fmt.Sprintf("Content-Length %d bytes longer than the body", f.missing)
}

func (f *truncateFault) ServeHTTP(x *Exchange, next http.Handler) {
	// Buffer the healthy response to learn its length, then announce more.
	var body bytes.Buffer
	code := 0
	bw := &bodyWriter{base: x.W}
	bw.header = func(c int) int { code = c; return c }
	bw.write = body.Write
	// Keep the headers from reaching the client before we set the length.
	bw.base = headerHolder{x.W}
	next.ServeHTTP(bw, x.R)
	if code == 0 {
		code = http.StatusOK
	}
	h := x.W.Header()
	h.Del("Transfer-Encoding")
	h.Set("Content-Length", strconv.FormatInt(int64(body.Len())+f.missing, 10))
	x.W.WriteHeader(code)
	if _, err := x.W.Write(body.Bytes()); err != nil {
		x.SetOutcome(journal.OutcomeUpstreamGone)
		return
	}
	x.cutConn().Close()
	x.SetOutcome(journal.OutcomeUpstreamCut)
}

// headerHolder is a ResponseWriter that shares the real header map but
// swallows WriteHeader and Flush, so a buffering fault decides when the
// headers go out.
type headerHolder struct{ w http.ResponseWriter }

func (h headerHolder) Header() http.Header         { return h.w.Header() }
func (h headerHolder) WriteHeader(int)             {}
func (h headerHolder) Write(p []byte) (int, error) { return len(p), nil }
func (h headerHolder) Flush()                      {}
