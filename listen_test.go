package rehearse

import (
	"net"
	"strings"
	"testing"
)

func TestCheckLoopback(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "127.8.0.1:80", "[::1]:0", "localhost:9000"} {
		if err := CheckLoopback(addr); err != nil {
			t.Errorf("%s: %v", addr, err)
		}
	}
	for _, addr := range []string{"0.0.0.0:8080", ":8080", "[::]:8080", "192.168.1.4:80", "example.com:80", "[::ffff:0.0.0.0]:1"} {
		if err := CheckLoopback(addr); err == nil || !strings.Contains(err.Error(), "--allow-remote") {
			t.Errorf("%s: %v, want a refusal naming --allow-remote", addr, err)
		}
	}
	if err := CheckLoopback("nope"); err == nil || err.Error() != `want host:port, got "nope"` {
		t.Errorf("nope: %v", err)
	}
}

// TestListenBindsWhatWasAsked: 0.0.0.0 binds IPv4 only, not the
// dual-stack [::] that net.Listen("tcp", …) makes of it.
func TestListenBindsWhatWasAsked(t *testing.T) {
	for _, tt := range []struct{ addr, want string }{
		{"0.0.0.0:0", "0.0.0.0"},
		{"127.0.0.1:0", "127.0.0.1"},
	} {
		ln, err := Listen(tt.addr)
		if err != nil {
			t.Fatal(err)
		}
		host, _, _ := net.SplitHostPort(ln.Addr().String())
		ln.Close()
		if host != tt.want {
			t.Errorf("Listen(%s) bound %s, want %s", tt.addr, ln.Addr(), tt.want)
		}
	}
	if ln, err := Listen("[::1]:0"); err != nil {
		t.Logf("no IPv6 loopback here: %v", err)
	} else {
		if host, _, _ := net.SplitHostPort(ln.Addr().String()); host != "::1" {
			t.Errorf("Listen([::1]:0) bound %s", ln.Addr())
		}
		ln.Close()
	}
}
