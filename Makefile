# rehearse — build, test and measure.
#
#   make rehearse   run the default weekly drill on the embedded defaults
#   make test       the full test suite (what CI runs)
#   make bench      the harness against Vegeta, Toxiproxy and tshark (not in make test)
#   make drills     every built-in drill at full length; fails on any unmet expectation

GO       ?= go
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X main.version=$(VERSION)
BIN      := bin/rehearse
PKGS     := ./...
FUZZTIME ?= 5s

# The drill `make rehearse` runs: a built-in drill name or a scenario file.
SCENARIO ?= weekly

# Where make drills keeps its run directories (one per drill).
DRILLS_OUT ?= runs/drills-$(shell date -u +%Y%m%dT%H%M%SZ)

.PHONY: all build rehearse test drills drills-openclaw bench bench-go lint lint-workflows print-actionlint cross fuzz-smoke clean

all: lint test build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/rehearse

# The main job: a real rehearsal on the embedded defaults (the built-in
# reference gateway, the bundled capture, the weekly drill: 10 req/s for
# five minutes). The run directory and its report are printed at the end.
rehearse: build
	$(BIN) run $(SCENARIO)

test:
	$(GO) test -race -count=1 $(PKGS)

# Every built-in drill at its full length against the built-in gateway, two
# at a time (about 37 minutes of run time, 19 of wall time): fails if any
# expectation of any drill is not met (not observable counts as not met),
# naming it. Includes the weekly drill of make rehearse, the AI gateway
# drills, and retry-storm once more on the naive gateway, which must fail
# every expectation but no_lockstep_retries (its fixed 200 ms waits sit on
# the replay's 100 ms send grid, which the figure says). The run directories
# stay in $(DRILLS_OUT) for the reports.
drills:
	REHEARSE_DRILLS_OUT=$(abspath $(DRILLS_OUT)) $(GO) test -count=1 -run '^TestDrillVerdicts$$' -parallel 2 -timeout 40m -v ./rehearsal

# The OpenClaw drills (e2e/openclaw_drills_test.go): the real OpenClaw,
# installed by .ci/run in /opt/openclaw, in a network namespace with only
# loopback (root), each drill's figures held to OpenClaw's own log. About
# 8 minutes one after another (OpenClaw's shortest cooldown is 30 s).
# OPENCLAW_COUNT=3 runs each three times (the same shape run after run);
# OPENCLAW_DRILLS picks drills by name (a go test -run pattern).
OPENCLAW_COUNT  ?= 1
OPENCLAW_DRILLS ?= ^TestOpenClawDrill
drills-openclaw:
	REHEARSE_OPENCLAW_DRILLS=1 $(GO) test -count=$(OPENCLAW_COUNT) -run '$(OPENCLAW_DRILLS)' -timeout 60m -v ./e2e

# The harness against Vegeta, Toxiproxy and tshark in one run, paired and
# alternating, with ratios (scripts/bench.sh; BENCHFLAGS="-rounds 5" etc.).
bench:
	scripts/bench.sh $(BENCHFLAGS)

# Every package's go test benchmarks, once each.
bench-go:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go') 2>&1); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	GOOS=darwin GOARCH=arm64 $(GO) vet $(PKGS)

# The example CI workflows (examples/ci) checked by actionlint, pinned;
# .ci/run installs it with: go install $(ACTIONLINT_PKG)@$(ACTIONLINT_VERSION)
ACTIONLINT         ?= actionlint
ACTIONLINT_PKG     := github.com/rhysd/actionlint/cmd/actionlint
ACTIONLINT_VERSION := v1.7.12

print-actionlint:
	@echo $(ACTIONLINT_PKG)@$(ACTIONLINT_VERSION)

lint-workflows:
	@command -v $(ACTIONLINT) >/dev/null 2>&1 || { echo "actionlint not found: go install $(ACTIONLINT_PKG)@$(ACTIONLINT_VERSION)"; exit 1; }
	$(ACTIONLINT) examples/ci/*.yml

cross:
	GOOS=darwin GOARCH=arm64 $(GO) build -o /dev/null ./...
	GOOS=darwin GOARCH=amd64 $(GO) build -o /dev/null ./...
	GOOS=linux GOARCH=amd64 $(GO) build -o /dev/null ./...
	GOOS=linux GOARCH=arm64 $(GO) build -o /dev/null ./...

# Each fuzz target for $(FUZZTIME); go test -fuzz takes one target at a time.
fuzz-smoke:
	@set -e; for pkg in $$($(GO) list ./...); do \
		for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
			echo "fuzz $$pkg $$target"; \
			$(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $$pkg; \
		done; \
	done

clean:
	rm -rf bin
