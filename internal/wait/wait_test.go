package wait

import (
	"context"
	"testing"
	"time"
)

func TestFor(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	if !For(ctx, time.Millisecond) || !For(ctx, 0) {
		t.Fatal("a live context: the wait elapses")
	}
	cancel()
	if For(ctx, time.Hour) || For(ctx, 0) {
		t.Fatal("a cancelled context: the wait is cut short")
	}
}
