package rehearsal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"time"

	"github.com/halfopen/rehearse"
)

// DefaultReadyTimeout is how long the conductor waits for the gateway under
// test to answer before giving up with exit code 3.
const DefaultReadyTimeout = 5 * time.Second

// waitReady polls url until the gateway answers with any HTTP response (a
// 503 from a gateway is an answer: it is up, if unhappy) or, with
// require2xx, with a 2xx. It returns an error wrapping
// rehearse.ErrEnvironment when no such answer comes in time.
func waitReady(ctx context.Context, client *http.Client, url string, timeout time.Duration, require2xx bool) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var lastErr error
	backoff := 25 * time.Millisecond
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("%w: gateway url %q: %w", rehearse.ErrInvalid, url, err)
		}
		req.Header.Set("User-Agent", "rehearse-ready-check")
		resp, err := client.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			if !require2xx || resp.StatusCode/100 == 2 {
				return nil
			}
			err = fmt.Errorf("answered %s, want 2xx", resp.Status)
		}
		lastErr = err
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.Canceled) {
				return ctx.Err() // interrupted, not unreachable
			}
			// One plain sentence a person reads in a log: what was
			// tried, for how long, and the cause in words, not the
			// whole chain of Go errors (Get "…": dial tcp …: connect:).
			if require2xx && lastErr != nil && !isDialError(lastErr) {
				return fmt.Errorf("%w: gateway at %s not ready after %s: %s", rehearse.ErrEnvironment, url, timeout, plainCause(lastErr))
			}
			return fmt.Errorf("%w: gateway unreachable at %s after %s: %s; check that it is running and that its URL (gateway.url or --gateway) is right",
				rehearse.ErrEnvironment, url, timeout, plainCause(lastErr))
		case <-time.After(backoff):
		}
		if backoff < 250*time.Millisecond {
			backoff *= 2
		}
	}
}

// plainCause is the innermost meaningful part of a failed readiness
// request, in words: "connection refused", "no such host example.test",
// "timed out", "answered 503 Service Unavailable, want 2xx".
func plainCause(err error) string {
	if err == nil {
		return "no answer"
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		if dns.IsNotFound {
			return "no such host " + dns.Name
		}
		return "cannot resolve " + dns.Name + ": " + dns.Err
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		var sys *os.SyscallError
		if errors.As(op.Err, &sys) {
			return sys.Err.Error()
		}
		if op.Timeout() {
			return "timed out"
		}
		return op.Err.Error()
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded) {
		return "timed out"
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "the connection closed before an answer"
	}
	var ue *neturl.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

// isDialError reports whether err is a failure to reach the server at all.
func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
