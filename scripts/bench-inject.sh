#!/bin/sh
# Benchmarks inject's proxy modes against Toxiproxy passthrough on this
# machine, in one run. Installs the Toxiproxy v2.5.0 server into a temporary
# directory through the Go module proxy (nothing is added to go.mod) and
# builds rehearse, so that both proxies also run as separate processes.
#
#   scripts/bench-inject.sh [go test -bench flags...]
set -eu
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
GOBIN="$bin" go install github.com/Shopify/toxiproxy/v2/cmd/server@v2.5.0
go build -o "$bin/rehearse" ./cmd/rehearse
TOXIPROXY_SERVER="$bin/server" REHEARSE_BIN="$bin/rehearse" \
	go test -run '^$' -bench 'Proxy' -benchtime 20000x "$@" ./inject/
