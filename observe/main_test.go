package observe

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine is left running:
// scrapers and canaries must stop with their context and leave no
// connection behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
