//go:build linux

package observe

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestLinuxProcFacts(t *testing.T) {
	root := t.TempDir()
	write := func(name, body string) {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := procRoot
	procRoot = root
	defer func() { procRoot = old }()

	// No /proc at all: empty facts, no panic.
	if cpuModel() != "" || len(tcpKeepalive()) != 0 {
		t.Fatal("facts from an empty /proc")
	}
	write("cpuinfo", "processor\t: 0\nBogoMIPS\t: 50.00\nCPU implementer\t: 0x41\nHardware\t: BCM2835\n")
	if got := cpuModel(); got != "BCM2835" {
		t.Errorf("arm cpu %q", got)
	}
	write("cpuinfo", "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\n\nprocessor\t: 1\nmodel name\t: other\n")
	if got := cpuModel(); got != "Intel(R) Xeon(R) CPU @ 2.20GHz" {
		t.Errorf("x86 cpu %q", got)
	}
	write("sys/net/ipv4/tcp_keepalive_time", "7200\n")
	write("sys/net/ipv4/tcp_keepalive_intvl", "75\n")
	write("sys/net/ipv4/tcp_keepalive_probes", "9\n")
	want := map[string]string{"net.ipv4.tcp_keepalive_time": "7200", "net.ipv4.tcp_keepalive_intvl": "75", "net.ipv4.tcp_keepalive_probes": "9"}
	if got := tcpKeepalive(); !reflect.DeepEqual(got, want) {
		t.Errorf("keepalive %v", got)
	}
	if _, ok := loadAverage(); ok {
		t.Error("load average without /proc/loadavg")
	}
	write("loadavg", "1.52 0.98 0.70 3/812 12345\n")
	if l, ok := loadAverage(); !ok || l != 1.52 {
		t.Errorf("load average %v %v", l, ok)
	}
	write("loadavg", "garbage\n")
	if _, ok := loadAverage(); ok {
		t.Error("load average from garbage")
	}
}
