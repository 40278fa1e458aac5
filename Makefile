# Tabula's build. `make run` starts the dev cluster; `make test` is what CI runs.
GO ?= go
export PATH := /usr/local/go/bin:$(PATH)

.PHONY: all build run test vet tidy proto bench fuzz soak clean tools chromium nftables node cxx

all: build

# -buildvcs=true stamps the git commit into the binary (`tabula version`),
# whatever GOFLAGS says; outside a git checkout the commit is unknown.
build:
	$(GO) build -buildvcs=true -o bin/tabula ./cmd/tabula

run: build
	./bin/tabula dev

vet:
	$(GO) vet ./...

# The whole suite with the race detector; e2e tests build and run real
# processes. Then the cluster tests once more, secured.
# First, go.mod and go.sum of both modules (the root and bench/) must be what
# `go mod tidy` makes of them: -diff prints the difference and fails without
# changing anything (`make tidy` fixes it). It fetches missing modules from the
# module proxy. Then the engine benchmark's own tests (a few thousand keys
# through every engine, in child processes), so the harness cannot rot.
# Then interop/ (a module of its own: DuckDB's Go bindings need cgo and link
# DuckDB's library, which no other build should): DuckDB reads the export
# package's Parquet files and writes files it reads. Without -race: the race
# build links DuckDB's C++ library instrumented (13 minutes here), and the
# code under test is Go that ./export's -race tests already cover.
test: vet tools
	$(GO) mod tidy -diff
	cd bench && $(GO) mod tidy -diff
	cd interop && $(GO) mod tidy -diff
	cd bench && $(GO) test -race -count=1 ./enginebench/
	cd interop && CGO_ENABLED=1 $(GO) test -count=1 ./...
	TABULA_WEED=$(CURDIR)/$(WEED) TABULA_REQUIRE_WEED=1 TABULA_CBT=$(CURDIR)/$(CBT) TABULA_REQUIRE_CBT=1 \
	  TABULA_BIGTABLE_IT=$(CURDIR)/$(BTIT) TABULA_REQUIRE_BIGTABLE_IT=1 \
	  TABULA_NODESUITE=$(CURDIR)/$(NODESUITE) TABULA_REQUIRE_NODESUITE=1 \
	  TABULA_CHROMIUM=$$(command -v chromium) TABULA_REQUIRE_CHROMIUM=1 TABULA_REQUIRE_NETNS=1 \
	  $(GO) test -race -timeout 25m ./...
	TABULA_TEST_SECURE=1 $(GO) test -race -count=1 -timeout 25m $(SECURE_PKGS)

# The packages whose tests start clusters run a second time with TLS on
# every port and authentication on (clients as the bootstrapped admin).
SECURE_PKGS = ./e2e ./cmd/tabula ./devcluster

# A long `tabula verify run`: a local cluster of real processes takes
# linked-list, counter and check-and-mutate writes while tablet servers,
# masters and etcd are killed, paused and restarted at random; then every
# acknowledged write is checked and the histories are checked for
# linearizability. Prints the report; fails on any violation. A short run
# is in `make test` (e2e TestVerifyUnderFaults). SOAK_FLAGS adds flags,
# e.g. SOAK_FLAGS="--seed 42 --keep".
# Then the same on SeaweedFS (--object-store) for SOAK_DURATION, where the
# store is also restarted, made slow, throttled (503 SlowDown) and cut off
# mid-request through a proxy, each fault at least three times; the
# report gives each fault's unavailability after the repair. A short run
# is in `make test` (e2e TestVerifyOnASlowThrottlingStore).
SOAK_DURATION ?= 10m
# Then the balancer's steady run (e2e TestBalancerSteadyLoad, 60 s in
# `make test`): even writes for BALANCER_SOAK, no tablet moves more than twice.
BALANCER_SOAK ?= 5m
# The soak's faults include the network partitions (root, ip, tc and nft
# of `make nftables`): every master and tablet server in a namespace of its
# own, cut off from etcd, isolated, on a slow or lossy link.
SOAK_FAULTS ?= server-kill,server-stop,master-kill,etcd-restart,server-etcd-cut,server-isolate,master-etcd-cut,slow-link,lossy-link
SOAK_FLAGS ?=
soak: build $(WEED).$(WEED_VERSION)
	./bin/tabula verify run --duration $(SOAK_DURATION) --faults $(SOAK_FAULTS) $(SOAK_FLAGS)
	TABULA_WEED=$(CURDIR)/$(WEED) ./bin/tabula verify run --object-store --duration $(SOAK_DURATION) --min-faults-per-kind 3 $(SOAK_FLAGS)
	BALANCER_SOAK=$(BALANCER_SOAK) $(GO) test ./e2e/ -run '^TestBalancerSteadyLoad$$' -count=1 -timeout 20m -v

# Rewrites go.mod and go.sum of the modules; bench/ and interop/ replace the
# root module with ../, so they follow the root's requirements.
tidy:
	$(GO) mod tidy
	cd bench && $(GO) mod tidy
	cd interop && $(GO) mod tidy

# The engine benchmark (bench/enginebench, module bench/): Tabula's tablet
# engine against pebble v2, pebble v1 and goleveldb, configured alike, each
# engine's workloads in a child process of its own; prints the markdown
# ratio table of docs/BENCHMARKS.md. The default (1M keys of 100 B, 200k of
# 1000 B, 3 interleaved runs) took 21 minutes on the 2-core development
# machine while it was shared (load average 14-17); less on an idle one.
# BENCH_FLAGS adds or overrides flags (`bin/enginebench -h` lists them), e.g.
# BENCH_FLAGS="-sizes 100:4000000,1000:800000 -runs 1" or
# BENCH_FLAGS="-engines tabula,pebble2 -tabula-sync none".
# Tabula runs in sync mode buffered, the promise of pebble's NoSync
# (docs/CONTRACTS.md §3); -tabula-sync none is goleveldb's Sync=false.
BENCH_FLAGS ?=
bench:
	cd bench && $(GO) build -o ../bin/enginebench ./enginebench
	./bin/enginebench -sizes 100:1000000,1000:200000 -runs 3 -durable-ops 8000 -tabula-sync buffered $(BENCH_FLAGS)

# Short fuzzing of every decoder (the seed corpora also run in `make test`).
FUZZTIME ?= 30s
# Runs every FuzzXxx of every package for FUZZTIME each (temp files in
# /dev/shm: the reader fuzzers write a file per input).
fuzz:
	for pkg in $$($(GO) list ./...); do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "== $$pkg $$f"; \
			TMPDIR=/dev/shm $(GO) test $$pkg -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) || exit 1; \
		done; \
	done

# Regenerates api/tabulapb from tabula.proto. Needs protoc (Debian's
# protobuf-compiler) and the Go plugins, installed by the first two lines.
proto:
	command -v protoc >/dev/null || (apt-get update && apt-get install -y protobuf-compiler)
	$(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
	$(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.0
	cd api/tabulapb && PATH="$$($(GO) env GOPATH)/bin:$$PATH" protoc --go_out=. --go_opt=paths=source_relative \
		--go-grpc_out=. --go-grpc_opt=paths=source_relative tabula.proto namespace.proto quota.proto bulkload.proto snapshot.proto backupsched.proto

# SeaweedFS, the S3-compatible object store the s3fs backend is tested
# against, built from its Go module (pinned) into .tools/ once; about 9
# minutes on 2 cores the first time (downloads included), nothing after.
# Its go.mod has replace directives, so `go install pkg@version` refuses
# it: the module is built in a copy as its own main module.
WEED_VERSION = v0.0.0-20261109003541-7506e5f91cd6
WEED = .tools/bin/weed
# cbt, Google's Bigtable CLI, pinned: e2e TestCbtAgainstTheDevCluster runs
# it unchanged against the dev cluster's Bigtable gateway (half a minute
# the first time).
CBT_VERSION = v1.3.0
CBT = .tools/bin/cbt
# The Go Bigtable client's own integration tests (TestIntegration_* of
# cloud.google.com/go/bigtable, pinned), compiled as a test binary: e2e
# TestGoClientIntegrationSuite runs it in emulator mode against the dev
# cluster's gateway. `go test -c` needs a main module, so the client's
# module is built in a copy as its own, with its own go.sum.
BTIT_VERSION = v1.58.0
BTIT = .tools/bin/bigtable-it.test
# The Node.js Bigtable client (@google-cloud/bigtable, pinned with every
# dependency by e2e/nodesuite/package-lock.json), installed by `npm ci`
# into .tools/nodesuite: e2e TestNodeClientSuite runs e2e/nodesuite/suite.js
# with it against the dev cluster's gateway. Again whenever the lockfile
# changes; about a minute the first time, nothing after.
NODESUITE = .tools/nodesuite/node_modules
tools: $(WEED).$(WEED_VERSION) $(CBT).$(CBT_VERSION) $(BTIT).$(BTIT_VERSION) $(NODESUITE)/.installed chromium nftables cxx

# A C++ toolchain for interop/'s cgo link of DuckDB's library (Debian's g++;
# the machines here have it, a bare one gets it with apt-get).
cxx:
	command -v g++ >/dev/null || (apt-get update && apt-get install -y g++)

# Debian's chromium, the headless browser e2e TestStatusPageInABrowser
# drives (with github.com/chromedp/chromedp): installed with apt-get when
# no chromium is on the PATH (needs root, as `make proto`'s protoc).
chromium:
	command -v chromium >/dev/null || (apt-get update && apt-get install -y chromium)

# Debian's nftables: the partition faults of `tabula verify run` (e2e
# TestVerifyUnderPartitions, the soak) drop packets with nft rules inside
# network namespaces. apt-get update only when apt does not know it yet.
nftables:
	command -v nft >/dev/null || apt-get install -y nftables || (apt-get update && apt-get install -y nftables)

# Node.js and npm (the suite needs Node 20's node:test): Debian's when no
# node is on the PATH.
node:
	command -v npm >/dev/null || (apt-get update && apt-get install -y nodejs npm)

# Install scripts are not run (--ignore-scripts): the client needs none
# (its optional native CRC32C falls back to JavaScript).
$(NODESUITE)/.installed: e2e/nodesuite/package.json e2e/nodesuite/package-lock.json | node
	rm -rf .tools/nodesuite && mkdir -p .tools/nodesuite
	cp e2e/nodesuite/package.json e2e/nodesuite/package-lock.json .tools/nodesuite/
	cd .tools/nodesuite && npm ci --ignore-scripts --no-audit --no-fund
	touch $@

$(WEED).$(WEED_VERSION):
	mkdir -p .tools/bin .tools/src
	src=$$($(GO) mod download -json github.com/seaweedfs/seaweedfs@$(WEED_VERSION) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p'); \
	  test -n "$$src" && rm -rf .tools/src/seaweedfs && cp -r "$$src" .tools/src/seaweedfs && chmod -R u+w .tools/src/seaweedfs
	cd .tools/src/seaweedfs && $(GO) build -o $(CURDIR)/$(WEED).tmp ./weed
	mv $(WEED).tmp $(WEED)
	rm -rf .tools/src/seaweedfs $(WEED).v*
	touch $@

$(CBT).$(CBT_VERSION):
	mkdir -p .tools/bin
	GOBIN=$(CURDIR)/.tools/bin $(GO) install cloud.google.com/go/bigtable/cmd/cbt@$(CBT_VERSION)
	rm -f $(CBT).v*
	touch $@

$(BTIT).$(BTIT_VERSION):
	mkdir -p .tools/bin .tools/src
	src=$$($(GO) mod download -json cloud.google.com/go/bigtable@$(BTIT_VERSION) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p'); \
	  test -n "$$src" && rm -rf .tools/src/bigtable && cp -r "$$src" .tools/src/bigtable && chmod -R u+w .tools/src/bigtable
	cd .tools/src/bigtable && $(GO) test -c -o $(CURDIR)/$(BTIT).tmp .
	mv $(BTIT).tmp $(BTIT)
	rm -rf .tools/src/bigtable $(BTIT).v*
	touch $@

clean:
	rm -rf bin
