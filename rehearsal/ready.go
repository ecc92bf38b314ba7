package rehearsal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
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
			if require2xx && lastErr != nil && !isDialError(lastErr) {
				return fmt.Errorf("%w: gateway at %s not ready after %s: %w", rehearse.ErrEnvironment, url, timeout, lastErr)
			}
			return fmt.Errorf("%w: gateway unreachable at %s after %s: %w (is it running, and is gateway.url right?)",
				rehearse.ErrEnvironment, url, timeout, lastErr)
		case <-time.After(backoff):
		}
		if backoff < 250*time.Millisecond {
			backoff *= 2
		}
	}
}

// isDialError reports whether err is a failure to reach the server at all.
func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
