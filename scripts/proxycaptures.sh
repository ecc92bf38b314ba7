#!/bin/sh
# proxycaptures.sh records the SOCKS and resynchronisation test captures of
# replay/capture/testdata with real tools, in a network namespace that has
# only loopback (unshare -n), so that nothing on the host is touched and no
# traffic leaves the machine:
#
#   - socks.pcap: curl --socks4 / --socks4a / --socks5 / --socks5-hostname
#     (IPv4, domain and IPv6 targets) through OpenSSH's dynamic forwarding
#     (ssh -D 1080 to an sshd on loopback, throwaway keys), and curl with
#     username/password through microsocks (port 1081), a wrong password,
#     and a raw SOCKS5 BIND request; to nginx on 127.0.0.1:8080 and
#     [::1]:8080. Only the SOCKS connections are captured (ports 1080, 1081).
#   - resync.pcap: request lines sent raw by a small python3 client on
#     keep-alive connections to nginx: lines nginx accepts and Go's
#     net/http refuses (several spaces, HTTP/1.10, spaces after the
#     version), lines neither accepts (HTTP/1.0.8, a bad method, a control
#     byte in the target), each followed by well-formed requests.
#
#   sudo sh scripts/proxycaptures.sh OUTDIR
#
# Needs root, iproute2, tcpdump, curl, python3, openssh-server,
# openssh-client, microsocks and nginx (Debian: nginx-light).
set -eu
out=${1:?usage: proxycaptures.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ "${PROXYCAPTURES_NS:-}" != 1 ]; then
	exec env PROXYCAPTURES_NS=1 unshare -n sh "$0" "$out"
fi
ip link set lo up
d=$(mktemp -d)
pids=
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null || true; done
	rm -rf "$d"
}
trap cleanup EXIT INT TERM

# waitport PORT: until something listens on 127.0.0.1:PORT.
waitport() {
	i=0
	until python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', $1), 0.2).close()" 2>/dev/null; do
		i=$((i + 1)); [ $i -lt 100 ] || { echo "nothing listens on $1" >&2; exit 1; }
		sleep 0.1
	done
}

cat >"$d/nginx.conf" <<EOF
daemon off; master_process off; pid $d/nginx.pid; error_log $d/error.log;
events {}
http {
	access_log off;
	client_body_temp_path $d; proxy_temp_path $d; fastcgi_temp_path $d; uwsgi_temp_path $d; scgi_temp_path $d;
	server { listen 127.0.0.1:8080; listen [::1]:8080; location / { return 200 "ok \$uri\n"; } }
}
EOF
nginx -c "$d/nginx.conf" & pids="$pids $!"
waitport 8080

# OpenSSH's dynamic forwarding: SOCKS4, SOCKS4a and SOCKS5 without auth.
mkdir -p /run/sshd
ssh-keygen -q -t ed25519 -N '' -f "$d/hostkey"
ssh-keygen -q -t ed25519 -N '' -f "$d/id"
cp "$d/id.pub" "$d/authorized_keys"
cat >"$d/sshd_config" <<EOF
Port 2222
ListenAddress 127.0.0.1
HostKey $d/hostkey
PidFile $d/sshd.pid
AuthorizedKeysFile $d/authorized_keys
PermitRootLogin prohibit-password
StrictModes no
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
AllowTcpForwarding yes
EOF
/usr/sbin/sshd -D -e -f "$d/sshd_config" 2>"$d/sshd.log" & pids="$pids $!"
waitport 2222
ssh -F none -N -D 127.0.0.1:1080 -p 2222 -i "$d/id" -o StrictHostKeyChecking=no \
	-o UserKnownHostsFile=/dev/null -o BatchMode=yes root@127.0.0.1 2>"$d/ssh.log" & pids="$pids $!"
waitport 1080
# microsocks: SOCKS5 with username/password.
microsocks -i 127.0.0.1 -p 1081 -u alice -P s3cret-socks-pass >"$d/microsocks.log" 2>&1 & pids="$pids $!"
waitport 1081

tcpdump -i lo -s 0 -U -w "$out/socks.pcap" 'tcp port 1080 or tcp port 1081' 2>"$d/tcpdump.log" & tpid=$!
sleep 1
c="curl -sS -o /dev/null --max-time 5"
$c --socks4 127.0.0.1:1080 http://127.0.0.1:8080/socks4
$c -x socks4://someuser@127.0.0.1:1080 http://127.0.0.1:8080/socks4-userid
$c --socks4a 127.0.0.1:1080 http://localhost:8080/socks4a
$c --socks5 127.0.0.1:1080 http://127.0.0.1:8080/socks5-ipv4
$c --socks5-hostname 127.0.0.1:1080 http://localhost:8080/socks5-domain http://localhost:8080/socks5-keepalive
$c --socks5 127.0.0.1:1080 'http://[::1]:8080/socks5-ipv6'
$c -x socks5h://alice:s3cret-socks-pass@127.0.0.1:1081 -H 'Content-Type: text/plain' -d 'hello' http://localhost:8080/socks5-auth
$c -x socks5://alice:wrong-socks-pass@127.0.0.1:1081 http://127.0.0.1:8080/socks5-bad-password || true
# A SOCKS5 BIND request (curl sends only CONNECT): OpenSSH takes CONNECT only.
python3 - <<'EOF'
import socket
s = socket.create_connection(("127.0.0.1", 1080))
s.sendall(b"\x05\x01\x00"); s.recv(2)
s.sendall(b"\x05\x02\x00\x01\x7f\x00\x00\x01\x1f\x90")
s.settimeout(2)
try: s.recv(64)
except Exception: pass
s.close()
EOF
sleep 1
kill $tpid; wait $tpid || true

# Request lines sent raw on keep-alive connections to nginx.
tcpdump -i lo -s 0 -U -w "$out/resync.pcap" 'tcp port 8080' 2>"$d/tcpdump2.log" & tpid=$!
sleep 1
python3 - <<'EOF'
import socket, time

def conn(*sends):
    s = socket.create_connection(("127.0.0.1", 8080))
    s.settimeout(0.5)
    for b in sends:
        try:
            s.sendall(b)
        except OSError:
            break
        try:
            while s.recv(65536):
                if b.endswith(b"\r\n\r\n") or b.endswith(b"abc"):
                    break
        except (socket.timeout, OSError):
            pass
    s.close()

# nginx takes these (Go's net/http does not): several spaces, a
# two-digit minor version, spaces after the version; then a normal one.
conn(b"GET  /two-spaces HTTP/1.1\r\nHost: a\r\n\r\n",
     b"GET /minor-10 HTTP/1.10\r\nHost: a\r\n\r\n",
     b"GET /trailing-space HTTP/1.1  \r\nHost: a\r\n\r\n",
     b"GET /plain HTTP/1.1\r\nHost: a\r\n\r\n")
# A first line neither server takes, then requests in the same write.
conn(b"GET /v108 HTTP/1.0.8\r\nHost: a\r\n\r\nGET /after-version HTTP/1.1\r\nHost: a\r\n\r\nPOST /after-version-post HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc")
# A request, then a bad method, then a request.
conn(b"GET /before-method HTTP/1.1\r\nHost: a\r\n\r\n",
     b"G@T /bad-method HTTP/1.1\r\nHost: a\r\n\r\nGET /after-method HTTP/1.1\r\nHost: a\r\n\r\n")
# A control byte in the target, then a request.
conn(b"GET /ctl\x01byte HTTP/1.1\r\nHost: a\r\n\r\nGET /after-target HTTP/1.1\r\nHost: a\r\n\r\n")
EOF
sleep 1
kill $tpid; wait $tpid || true
ls -l "$out/socks.pcap" "$out/resync.pcap"
