#!/bin/sh
# make bench: the harness side by side with Vegeta, Toxiproxy and tshark in
# one run (scripts/bench/main.go says what is measured and how). Installs
# the Toxiproxy v2.5.0 server into a temporary directory through the Go
# module proxy (nothing is added to go.mod) and builds rehearse; wrk,
# haproxy and tshark are Debian packages (apt-get install wrk haproxy
# tshark); a section or row whose tool is missing says so and is skipped.
#
#   scripts/bench.sh [-rounds N] [-only proxy,pacing,capture,analysis,drill] [...]
#
# It takes about 22 minutes with the defaults (3 rounds, a 2-minute drill
# of each kind and the three 30 s floor runs per round; -floor-window 0
# leaves the floor out). Not part of make test.
set -eu
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
GOBIN="$bin" go install github.com/Shopify/toxiproxy/v2/cmd/server@v2.5.0
go build -o "$bin/rehearse" ./cmd/rehearse
go run ./scripts/bench -rehearse "$bin/rehearse" -toxiproxy "$bin/server" "$@"
