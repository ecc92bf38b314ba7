//go:build darwin

package observe

import (
	"strconv"
	"strings"
	"testing"
)

// TestDarwinFacts runs on a Mac: the BSD keepalive sysctls and the CPU
// brand string must be read.
func TestDarwinFacts(t *testing.T) {
	if cpuModel() == "" {
		t.Error("machdep.cpu.brand_string not read")
	}
	ka := tcpKeepalive()
	for _, k := range []string{"net.inet.tcp.keepidle", "net.inet.tcp.keepintvl", "net.inet.tcp.keepcnt", "net.inet.tcp.always_keepalive"} {
		if _, err := strconv.ParseUint(ka[k], 10, 32); err != nil {
			t.Errorf("%s = %q", k, ka[k])
		}
	}
	if k := kernel(); !strings.HasPrefix(k, "Darwin ") {
		t.Errorf("kernel %q", k)
	}
}
