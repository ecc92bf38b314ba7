#!/bin/sh
# tunnelcaptures.sh records the tunnel and link-layer test captures of
# replay/capture/testdata (docs/capture.md, testdata/README.md) with real
# tools, in two network namespaces of its own joined by a veth pair, so
# that nothing on the host is touched and no traffic leaves the machine:
#
#   h33a (10.88.0.1, fd88::1) --veth-- h33b (10.88.0.2, fd88::2)
#
# The kernel makes the tunnels it has (VXLAN over IPv4 on the IANA port,
# VXLAN over IPv6 on Linux's default port 8472) and NFLOG records
# (iptables/ip6tables NFLOG rules read by `tcpdump -i nflog:33`); a small
# python3 HTTP server in h33b answers curl in h33a, and tcpdump records on
# the underlay. The build machine's kernel has no GRE, IPIP, SIT, ip6tnl,
# ERSPAN, GTP or MPLS modules, so the plain captures plain4.pcap and
# plain6.pcap (the same exchange over the bare veth) are written to OUTDIR
# too, and scripts/tunnelwrap.py (scapy) encapsulates their packets byte
# for byte in the other tunnels and link layers.
#
#   sudo sh scripts/tunnelcaptures.sh OUTDIR
#
# Needs root, iproute2, iptables, tcpdump, curl and python3.
set -eu
out=${1:?usage: tunnelcaptures.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
tmp=$(mktemp -d)
srvpids=
cleanup() {
	for p in $srvpids; do kill "$p" 2>/dev/null || true; done
	for n in h33a h33b; do ip netns del $n 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

for n in h33a h33b; do
	ip netns del $n 2>/dev/null || true
	ip netns add $n
	ip -n $n link set lo up
done
ip link add h33va type veth peer name h33vb
ip link set h33va netns h33a
ip link set h33vb netns h33b
ip -n h33a addr add 10.88.0.1/24 dev h33va
ip -n h33b addr add 10.88.0.2/24 dev h33vb
ip -n h33a addr add fd88::1/64 dev h33va nodad
ip -n h33b addr add fd88::2/64 dev h33vb nodad
ip -n h33a link set h33va up
ip -n h33b link set h33vb up

# VXLAN over IPv4, IANA port, inner IPv4 192.168.77.0/24.
ip -n h33a link add vx4 type vxlan id 77 dstport 4789 local 10.88.0.1 remote 10.88.0.2
ip -n h33b link add vx4 type vxlan id 77 dstport 4789 local 10.88.0.2 remote 10.88.0.1
ip -n h33a addr add 192.168.77.1/24 dev vx4
ip -n h33b addr add 192.168.77.2/24 dev vx4
# VXLAN over IPv6 on Linux's default port, inner IPv6 fd77::/64.
ip -n h33a link add vx6 type vxlan id 78 dstport 8472 local fd88::1 remote fd88::2
ip -n h33b link add vx6 type vxlan id 78 dstport 8472 local fd88::2 remote fd88::1
ip -n h33a addr add fd77::1/64 dev vx6 nodad
ip -n h33b addr add fd77::2/64 dev vx6 nodad
for n in h33a h33b; do ip -n $n link set vx4 up; ip -n $n link set vx6 up; done

# The server: any method, keep-alive, on every address of h33b.
cat >"$tmp/server.py" <<'PY'
import http.server, socket, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def handle_any(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        body = b'{"ok":true}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    do_GET = do_POST = do_PUT = do_DELETE = handle_any
class S(http.server.ThreadingHTTPServer):
    address_family = socket.AF_INET6
    def server_bind(self):
        self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()
S(("::", 8080), H).serve_forever()
PY
ip netns exec h33b python3 "$tmp/server.py" &
srvpids="$srvpids $!"
for _ in $(seq 50); do
	ip netns exec h33a curl -s -o /dev/null http://10.88.0.2:8080/ready 2>/dev/null && break
	sleep 0.1
done
sleep 1 # let the tunnels' neighbour entries settle

# capture FILE NS TCPDUMP-ARGS -- CMD...: tcpdump in NS while CMD runs.
capture() {
	file=$1 ns=$2
	shift 2
	args=
	while [ "$1" != -- ]; do args="$args $1"; shift; done
	shift
	# shellcheck disable=SC2086
	ip netns exec "$ns" tcpdump -s 0 -U --immediate-mode -w "$file" $args 2>"$tmp/tcpdump.log" &
	td=$!
	for _ in $(seq 50); do
		grep -q listening "$tmp/tcpdump.log" && break
		sleep 0.1
	done
	"$@"
	# NFLOG batches records for up to a second (nfnetlink_log's flush
	# timeout) before tcpdump sees them.
	sleep 2
	kill -INT $td
	wait $td || true
	cat "$tmp/tcpdump.log" >&2
}

# exchange HOST KIND: two requests on one keep-alive connection, a GET
# and a JSON POST whose paths name the capture.
exchange() {
	ip netns exec h33a curl -sS -o /dev/null "http://$1:8080/$2/weather?city=Oslo" \
		--next -sS -o /dev/null -H 'Content-Type: application/json' --data-binary '{"query":"circuit breaker"}' "http://$1:8080/$2/search"
}

capture "$out/vxlan4.pcap" h33a -i h33va udp port 4789 -- exchange 192.168.77.2 vxlan4
capture "$out/vxlan6-8472.pcap" h33a -i h33va udp port 8472 -- exchange '[fd77::2]' vxlan6
# tcpdump -i any on a host with a VXLAN overlay (a Kubernetes node with
# flannel, say) sees every packet twice: on the overlay device,
# decapsulated, and on the underlay, in VXLAN.
capture "$out/any-vxlan.pcap" h33a -i any 'udp port 4789 or tcp port 8080' -- exchange 192.168.77.2 anyvx
capture "$out/plain4.pcap" h33a -i h33va tcp port 8080 -- exchange 10.88.0.2 plain4
capture "$out/plain6.pcap" h33a -i h33va tcp port 8080 -- exchange '[fd88::2]' plain6

# NFLOG: the server's namespace logs its HTTP packets over the veth, both
# directions, IPv4 and IPv6, to group 33.
for t in iptables ip6tables; do
	ip netns exec h33b $t -A INPUT -i h33vb -p tcp --dport 8080 -j NFLOG --nflog-group 33
	ip netns exec h33b $t -A OUTPUT -o h33vb -p tcp --sport 8080 -j NFLOG --nflog-group 33
done
nflog_traffic() {
	exchange 10.88.0.2 nflog4
	exchange '[fd88::2]' nflog6
}
capture "$out/nflog.pcap" h33b -i nflog:33 -- nflog_traffic
