#!/bin/sh
# wildcaptures.sh records the "from the wild" test captures of
# replay/capture/testdata with real tools (tcpdump, curl, nc, python3's
# http.server), in network namespaces of their own so that nothing on the
# host is touched and no traffic leaves the machine:
#
#   h20cli (10.77.1.2, MTU 1500) -- h20rtr (forwards; MTU 576 towards srv) -- h20srv (10.77.2.2)
#
# The client clears DF (net.ipv4.ip_no_pmtu_disc=1 in its namespace), so the
# router fragments every packet larger than 576 bytes, as a router in front
# of a small-MTU link or a tunnel does; tcpdump on the server's interface
# sees the fragments before the server's kernel reassembles them.
#
#   sudo sh scripts/wildcaptures.sh OUTDIR
#
# writes OUTDIR/frag-ipv4.pcap and OUTDIR/odd-targets.pcap. Needs root,
# iproute2, tcpdump, curl, nc (netcat-openbsd) and python3.
set -eu
out=${1:?usage: wildcaptures.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
tmp=$(mktemp -d)
srvpid=
cleanup() {
	[ -n "$srvpid" ] && kill "$srvpid" 2>/dev/null || true
	for n in h20cli h20rtr h20srv; do ip netns del $n 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

for n in h20cli h20rtr h20srv; do
	ip netns del $n 2>/dev/null || true
	ip netns add $n
	ip -n $n link set lo up
done
ip link add h20c type veth peer name h20r1
ip link set h20c netns h20cli
ip link set h20r1 netns h20rtr
ip link add h20r2 type veth peer name h20s
ip link set h20r2 netns h20rtr
ip link set h20s netns h20srv
ip -n h20cli addr add 10.77.1.2/24 dev h20c
ip -n h20cli link set h20c up
ip -n h20rtr addr add 10.77.1.1/24 dev h20r1
ip -n h20rtr link set h20r1 up
ip -n h20rtr addr add 10.77.2.1/24 dev h20r2
ip -n h20rtr link set h20r2 mtu 576 up
ip -n h20srv addr add 10.77.2.2/24 dev h20s
ip -n h20srv link set h20s up
ip -n h20cli route add default via 10.77.1.1
ip -n h20srv route add default via 10.77.2.1
ip netns exec h20rtr sysctl -qw net.ipv4.ip_forward=1
ip netns exec h20cli sysctl -qw net.ipv4.ip_no_pmtu_disc=1

# The server: any method, keep-alive, a server-sent-events stream on /events.
cat >"$tmp/server.py" <<'EOF'
import http.server, sys, time
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def handle_any(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        if self.path == "/events":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            for i in range(3):
                self.wfile.write(b"data: {\"delta\": %d}\n\n" % i)
                self.wfile.flush()
                time.sleep(0.05)
            self.close_connection = True
            return
        body = b'{"ok":true}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = handle_any
http.server.ThreadingHTTPServer(("10.77.2.2", 8080), H).serve_forever()
EOF
ip netns exec h20srv python3 "$tmp/server.py" &
srvpid=$!
for _ in $(seq 50); do
	ip netns exec h20cli curl -s -o /dev/null http://10.77.2.2:8080/ready 2>/dev/null && break
	sleep 0.1
done

# capture FILE CMD...: tcpdump on the server's interface while CMD runs.
capture() {
	file=$1
	shift
	ip netns exec h20srv tcpdump -i h20s -s 0 -U --immediate-mode -w "$file" 'host 10.77.1.2' 2>"$tmp/tcpdump.log" &
	td=$!
	for _ in $(seq 50); do
		grep -q listening "$tmp/tcpdump.log" && break
		sleep 0.1
	done
	"$@"
	sleep 0.5
	kill -INT $td
	wait $td || true
	cat "$tmp/tcpdump.log" >&2
}

big=$(python3 -c 'import json; print(json.dumps({"query": "fragmented " * 300}))')
long=$(python3 -c 'print("v" * 1200)')
cli() { ip netns exec h20cli "$@"; }

frag_traffic() {
	# A 3 KB POST and a GET with a 1.2 KB header on one keep-alive
	# connection, then an SSE stream: every packet over 576 bytes is
	# fragmented by the router.
	cli curl -sS -o /dev/null -H 'Content-Type: application/json' --data-binary "$big" \
		http://10.77.2.2:8080/tools/search \
		--next -sS -o /dev/null -H "X-Trace-Context: $long" http://10.77.2.2:8080/tools/weather?city=Oslo
	cli curl -sS -o /dev/null -H 'Accept: text/event-stream' -H "X-Trace-Context: $long" http://10.77.2.2:8080/events
}
capture "$out/frag-ipv4.pcap" frag_traffic

odd_traffic() {
	# Targets Go's URL parser refuses, as scanners and broken clients send
	# them, pipelined on one connection by nc; then curl's own (--path-as-is
	# keeps the bytes) on another.
	printf 'GET /%% HTTP/1.1\r\nHost: 10.77.2.2:8080\r\n\r\nGET /%%5 HTTP/1.1\r\nHost: 10.77.2.2:8080\r\n\r\nGET /files/a%%zz.txt?q=%%41 HTTP/1.1\r\nHost: 10.77.2.2:8080\r\n\r\nGET /caf\303\251 HTTP/1.1\r\nHost: 10.77.2.2:8080\r\n\r\nGET /healthz HTTP/1.1\r\nHost: 10.77.2.2:8080\r\nConnection: close\r\n\r\n' |
		cli nc -q 2 10.77.2.2 8080 >/dev/null
	cli curl -sS -o /dev/null --path-as-is 'http://10.77.2.2:8080/search?q=100%'
	cli curl -sS -o /dev/null --path-as-is 'http://10.77.2.2:8080/%E0%A4%A'
}
capture "$out/odd-targets.pcap" odd_traffic
