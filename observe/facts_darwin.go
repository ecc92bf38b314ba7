//go:build darwin

package observe

import (
	"strconv"

	"golang.org/x/sys/unix"
)

// cpuModel reads machdep.cpu.brand_string ("Apple M2", "Intel(R) Core…").
func cpuModel() string {
	s, err := unix.Sysctl("machdep.cpu.brand_string")
	if err != nil {
		return ""
	}
	return s
}

// tcpKeepalive reads the BSD TCP keepalive sysctls, keyed by name.
// keepidle and keepintvl are in milliseconds, keepcnt a count, and
// always_keepalive a 0/1 switch. Go's net.Dialer and net.Listener set their
// own per-socket idle time (15 s) unless KeepAlive is negative.
func tcpKeepalive() map[string]string {
	out := map[string]string{}
	for _, name := range []string{
		"net.inet.tcp.keepidle",
		"net.inet.tcp.keepintvl",
		"net.inet.tcp.keepcnt",
		"net.inet.tcp.always_keepalive",
	} {
		v, err := unix.SysctlUint32(name)
		if err != nil {
			continue
		}
		out[name] = strconv.FormatUint(uint64(v), 10)
	}
	return out
}

// loadAverage reads vm.loadavg: struct loadavg { fixpt_t ldavg[3]; long
// fscale; } with 32-bit fixed-point loads, padding, and a 64-bit scale
// (the layout of getloadavg(3) on 64-bit macOS).
func loadAverage() (float64, bool) {
	b, err := unix.SysctlRaw("vm.loadavg")
	if err != nil {
		return 0, false
	}
	return parseLoadavg(b)
}
