package rehearsal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/halfopen/rehearse"
)

// DefaultReadyTimeout is how long the conductor waits for the gateway under
// test to answer before giving up with exit code 3.
const DefaultReadyTimeout = 5 * time.Second

// waitReady polls url until the gateway answers with any HTTP response (a
// 503 from a gateway is an answer: it is up, if unhappy). It returns an
// error wrapping rehearse.ErrEnvironment when nothing answers in time.
func waitReady(ctx context.Context, client *http.Client, url string, timeout time.Duration) error {
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
			return nil
		}
		lastErr = err
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.Canceled) {
				return ctx.Err() // interrupted, not unreachable
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
