# BeaconHub. `make run` builds and serves with home ./data; `make test`
# installs the real test peers (Debian packages) and runs the whole suite.

GO         ?= go
BRAND      ?= neutral
HOME_DIR   ?= ./data
VERSION    ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT     ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
BUILD_TIME ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
PKG        := beaconhub
LDFLAGS    := -s -w \
	-X $(PKG)/appliance/buildinfo.Version=$(VERSION) \
	-X $(PKG)/appliance/buildinfo.Commit=$(COMMIT) \
	-X $(PKG)/appliance/buildinfo.BuildTime=$(BUILD_TIME) \
	-X $(PKG)/appliance/config.BrandName=$(BRAND)
TEST_FLAGS ?= -race -timeout 20m
# The tracking engine's long replays (accuracy, flips, estimates over
# minutes of readings) skip themselves under -race, where they take 10-15
# times as long and check no concurrency the short ones miss; they run
# here in a second pass without it (appliance/rtls helpers_test.go,
# longReplay).
REPLAY_PKGS := ./appliance/rtls/...

.PHONY: all build run test test-deps lint vet fmt-check bench clean

all: build

build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/beaconhub ./cmd/beaconhub

run: build
	mkdir -p $(HOME_DIR)
	./bin/beaconhub serve --home $(HOME_DIR)

# Installs what the tests talk to for real (mosquitto broker and clients; the
# Zabbix 6.0 server, its frontend and PostgreSQL for the bridge)
# and the linters. Idempotent; needs root or sudo for apt-get.
test-deps:
	./.ci/install-test-peers.sh

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

lint: fmt-check vet
	$$($(GO) env GOPATH)/bin/staticcheck ./...

test: test-deps lint
	$(GO) test $(TEST_FLAGS) ./...
	$(GO) test -timeout 20m $(REPLAY_PKGS)

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

clean:
	rm -rf bin

# The bridge against a real Zabbix 6.0 from Debian's packages (docs/bridge.md);
# CI=true makes a missing peer a failure instead of a skip.
.PHONY: test-zabbix
test-zabbix: test-deps
	CI=true $(GO) test -count=1 -run 'TestBridgeFeedsRealZabbix|TestCrossCheckWithZabbixSender' ./appliance/ ./appliance/bridge/
# The integration API contract alone (also part of `make test`): route table
# vs openapi.json, the OpenAPI 3.1 validator, and the typed client walk.
.PHONY: openapi-check
openapi-check:
	$(GO) test -count=1 -run 'TestOpenAPI|TestIntegrationClientWalk|TestIntegrationDocs' ./handlers
