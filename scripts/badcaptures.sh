#!/bin/sh
# badcaptures.sh DIR — record the two real captures that hold nothing
# replayable, for the tests of `rehearse validate` and `rehearse run`:
#
#   DIR/tls-only.pcap    three HTTPS requests (curl -k) to openssl s_server
#   DIR/redis-only.pcap  three redis-cli commands (PING, SET, GET) to redis-server
#
# Both are recorded by tcpdump on the loopback interface, filtered to the
# server's port. Needs root (or CAP_NET_RAW) and tcpdump, openssl, curl,
# redis-server, redis-cli. The empty, text and truncated captures of the
# same tests are made by the tests themselves.
set -eu
dir=${1:?usage: badcaptures.sh DIR}
mkdir -p "$dir"
tmp=$(mktemp -d)
trap 'kill $srv $dump 2>/dev/null || true; rm -rf "$tmp"' EXIT

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# capture FILE PORT: start tcpdump on lo for PORT; returns when it listens.
capture() {
	tcpdump -i lo -U -s 0 -w "$1" "tcp port $2" 2>"$tmp/dump.log" &
	dump=$!
	for _ in $(seq 50); do grep -q "listening on" "$tmp/dump.log" && break; sleep 0.1; done
	sleep 0.5 # tcpdump says it listens a moment before it captures
}
# finish: let the last packets reach the file, stop tcpdump with SIGINT.
finish() { sleep 0.5; kill -INT $dump; wait $dump || true; }

# TLS: a self-signed certificate, openssl s_server -www, three curl -k.
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tmp/key.pem" -out "$tmp/cert.pem" \
	-days 1 -subj /CN=127.0.0.1 2>/dev/null
port=$(freeport)
openssl s_server -quiet -accept "127.0.0.1:$port" -www -key "$tmp/key.pem" -cert "$tmp/cert.pem" >/dev/null 2>&1 &
srv=$!
for _ in $(seq 50); do curl -ks -o /dev/null "https://127.0.0.1:$port/" && break; sleep 0.1; done
capture "$dir/tls-only.pcap" "$port"
for i in 1 2 3; do curl -ks -o /dev/null "https://127.0.0.1:$port/tools/weather?city=$i"; done
finish
kill $srv; wait $srv 2>/dev/null || true

# Redis: redis-server without persistence, one redis-cli session.
port=$(freeport)
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no >/dev/null &
srv=$!
for _ in $(seq 50); do redis-cli -p "$port" PING >/dev/null 2>&1 && break; sleep 0.1; done
capture "$dir/redis-only.pcap" "$port"
redis-cli -p "$port" PING >/dev/null
redis-cli -p "$port" SET breaker:search open >/dev/null
redis-cli -p "$port" GET breaker:search >/dev/null
finish
kill $srv; wait $srv 2>/dev/null || true
ls -l "$dir/tls-only.pcap" "$dir/redis-only.pcap"
