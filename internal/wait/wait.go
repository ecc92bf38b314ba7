// Package wait is the harness's one cancellable sleep.
package wait

import (
	"context"
	"time"
)

// For waits d or until ctx is done, whichever comes first, and reports
// whether d elapsed. A d of zero or less does not wait: it reports whether
// ctx is still live.
func For(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
