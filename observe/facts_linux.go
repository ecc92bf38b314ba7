//go:build linux

package observe

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// procRoot is where /proc is read from; tests point it at a fixture.
var procRoot = "/proc"

// cpuModel reads the first "model name" (x86) or "Hardware"/"Processor"
// (some ARM kernels) line of /proc/cpuinfo.
func cpuModel() string {
	f, err := os.Open(filepath.Join(procRoot, "cpuinfo"))
	if err != nil {
		return ""
	}
	defer f.Close()
	var fallback string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "model name":
			return v
		case "Hardware", "Processor":
			if fallback == "" {
				fallback = v
			}
		}
	}
	return fallback
}

// tcpKeepalive reads the kernel's TCP keepalive defaults (seconds, seconds,
// count), keyed by their sysctl names. Go's net.Dialer and net.Listener
// override them per socket (15 s idle) unless KeepAlive is negative; the
// kernel values apply to sockets that do not set their own.
func tcpKeepalive() map[string]string {
	out := map[string]string{}
	for _, name := range []string{"tcp_keepalive_time", "tcp_keepalive_intvl", "tcp_keepalive_probes"} {
		b, err := os.ReadFile(filepath.Join(procRoot, "sys/net/ipv4", name))
		if err != nil {
			continue
		}
		out["net.ipv4."+name] = strings.TrimSpace(string(b))
	}
	return out
}

// loadAverage reads the one-minute load average from /proc/loadavg.
func loadAverage() (float64, bool) {
	b, err := os.ReadFile(filepath.Join(procRoot, "loadavg"))
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	return v, err == nil && v >= 0
}
