package rehearse

import (
	"fmt"
	"net"
	"net/netip"
)

// Listen binds a TCP listener to exactly addr. net.Listen("tcp",
// "0.0.0.0:8080") binds the dual-stack [::]:8080 on Linux and macOS, so
// that a gateway asked for every IPv4 address also answered on every IPv6
// one, and said it listened on [::]. An IPv4 literal binds IPv4 only, an
// IPv6 literal IPv6 only; a name (localhost) or an empty host is left to
// net.Listen, as asked.
func Listen(addr string) (net.Listener, error) {
	network := "tcp"
	if host, _, err := net.SplitHostPort(addr); err == nil {
		if ip, err := netip.ParseAddr(host); err == nil {
			network = "tcp6"
			if ip.Is4() {
				network = "tcp4"
			}
		}
	}
	return net.Listen(network, addr)
}

// CheckLoopback returns nil when addr (host:port) can only be reached from
// this machine: an empty host and 0.0.0.0 or [::] mean every interface.
// The harness's listeners (fake upstreams, the control API, the built-in
// gateway) have no authentication, so binding beyond loopback takes an
// explicit --allow-remote, the same everywhere; the error says so.
func CheckLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("want host:port, got %q", addr)
	}
	if host == "localhost" {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%s is not a loopback address: other machines could reach it, and the harness's listeners have no authentication; give --allow-remote to listen there anyway", addr)
}
