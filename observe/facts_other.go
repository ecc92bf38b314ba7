//go:build !linux && !darwin

package observe

// On other systems only the portable facts are collected.

func kernel() string                  { return "" }
func cpuModel() string                { return "" }
func tcpKeepalive() map[string]string { return nil }

func loadAverage() (float64, bool) { return 0, false }
