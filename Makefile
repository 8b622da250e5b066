# gmq: `make run` sets up and starts the broker; `make test` runs every test.
GO ?= go
# A count, not a duration: a -fuzztime duration races Go's fuzz coordinator
# (golang.org/issue/75804, unfixed in Go 1.26) and fails a target with a bare
# "context deadline exceeded" and no crasher when a loaded machine slows a
# worker; CI failed that way on beanstalk's FuzzReadRequest.
FUZZTIME ?= 10000x

.PHONY: run build test test-loaded test-deps fuzz bench chaos vet clean

run:
	./scripts/run.sh

build:
	$(GO) build -o gmq .

vet:
	$(GO) vet ./...
	cd bench/asynq && $(GO) vet .  # its own module: asynq stays out of gmq's go.mod
	cd client && $(GO) vet ./...  # the Go client's own module (standard library only)
	cd client/livetest && $(GO) vet ./...  # its live tests, a module of their own: they need the broker's
	@test -z "$$(gofmt -l .)" || { echo "gofmt would change:"; gofmt -l .; exit 1; }

# Every test, with the race detector, against real redis-servers the tests
# start on free ports, and beside them each fuzz target for a bounded count
# (its output is kept and shown at the end: whole when it failed, else its
# summary lines). It first installs what a fresh Debian machine lacks
# (scripts/test-deps.sh). Each part runs even when another failed (a
# failing package does not hide the client modules' tests or the fuzz
# targets); make test fails at the end if any did, naming them. It takes
# about 10 minutes on 2 cores (README.md): its last two minutes leave a
# core half idle: a better packing (likely of the fuzz targets, which run one at
# a time) is where the next minute is. The timeout is a hang's
# backstop, not a speed limit: a loaded machine takes twice as long (make
# test-loaded).
TEST_TIMEOUT ?= 25m
# Three test binaries at once, and the fuzz targets beside them: most tests
# wait on the redis-servers and brokers they start, so two binaries at a
# time, then the fuzzing, left a core idle (1.2 of 2 busy; 13 to 14
# minutes in all). The slowest packages go first, so that none starts last
# and runs alone.
TEST_PARALLEL ?= 3
# The system tests (systemtest/) are several packages so that they run side
# by side: alone on 2 cores, chaos took 154 s, brokers 96, protocols 63,
# upgrade 44 (the older commits' builds cached; more without), process 30,
# and the root's (main's own) 36; as one root package they took 607 s of
# make test.
SLOW_PACKAGES = github.com/gmq/gmq/systemtest/chaos github.com/gmq/gmq/web github.com/gmq/gmq/broker github.com/gmq/gmq/docs \
	github.com/gmq/gmq/systemtest/upgrade github.com/gmq/gmq/systemtest/brokers github.com/gmq/gmq/clients/node \
	github.com/gmq/gmq/clients/python github.com/gmq/gmq/pool github.com/gmq/gmq/systemtest/protocols github.com/gmq/gmq/clients/php
test: test-deps
	@failed=""; fuzzlog=$$(mktemp); modlog=$$(mktemp); \
	$(MAKE) --no-print-directory vet || failed="$$failed vet"; \
	$(MAKE) --no-print-directory fuzz >"$$fuzzlog" 2>&1 & fuzzing=$$!; \
	{ (cd client && $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./...) || echo "FAILED: client"; \
	  (cd client/livetest && $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./...) || echo "FAILED: client/livetest"; \
	} >"$$modlog" 2>&1 & modules=$$!; \
	packages="$(SLOW_PACKAGES) $$($(GO) list ./... | grep -vxF $(foreach p,$(SLOW_PACKAGES),-e $(p)) | tr '\n' ' ')"; \
	$(GO) test -race -count=1 -p $(TEST_PARALLEL) -timeout $(TEST_TIMEOUT) $$packages || failed="$$failed gmq"; \
	wait $$modules; cat "$$modlog"; failed="$$failed$$(grep -o '^FAILED: .*' "$$modlog" | sed 's/^FAILED://' | tr -d '\n')"; rm -f "$$modlog"; \
	if wait $$fuzzing; then echo "make fuzz:"; grep -E '^(ok|FAIL)' "$$fuzzlog"; \
	else cat "$$fuzzlog"; failed="$$failed fuzz"; fi; rm -f "$$fuzzlog"; \
	if [ -n "$$failed" ]; then echo "make test: FAILED:$$failed"; exit 1; fi; \
	echo "make test: all passed"

# make test RUNS times (3) with six CPU-bound processes beside it, three a
# core on 2 cores (scripts/cpu-load.sh), to show that no test depends on how
# fast the machine is. Each run's time and outcome is printed at the end.
RUNS ?= 3
test-loaded: test-deps
	@./scripts/cpu-load.sh start $$((3 * $$(nproc))); \
	trap './scripts/cpu-load.sh stop' EXIT INT TERM; \
	results=""; status=0; \
	for i in $$(seq $(RUNS)); do \
	  start=$$(date +%s); \
	  if $(MAKE) --no-print-directory test; then r=passed; else r=FAILED; status=1; fi; \
	  results="$$results\nrun $$i: $$r in $$(( ($$(date +%s) - start) / 60 ))m$$(( ($$(date +%s) - start) % 60 ))s"; \
	done; \
	printf "make test-loaded:$$results\n"; exit $$status

test-deps:
	./scripts/test-deps.sh

# Each parser's fuzz target, for FUZZTIME; every one runs even when one
# before it failed. A worker the loaded machine starved is told from a
# crash by replaying its input alone (scripts/fuzz-one.sh). Every plain
# `go test` also replays the seeds in the code and the corpora kept in
# <package>/testdata/fuzz/ (inputs the fuzzer found; copy new ones from
# $$(go env GOCACHE)/fuzz).
FUZZ_TARGETS = ./web:FuzzParsePush ./web:FuzzParsePop ./web:FuzzParseJobCall ./web:FuzzParseAcks \
	./web:FuzzParsePage ./web:FuzzParseUpdate ./config:FuzzParse ./beanstalk:FuzzReadRequest \
	./gmqrpc:FuzzParseJob ./gmqrpc:FuzzReadValue ./kestrel/memcache:FuzzReadRequest ./kestrel/text:FuzzReadRequest ./kestrel/thrift:FuzzReadFrame ./internal/tcpserver:FuzzLooksLikeHTTP \
	./internal/jobjson:FuzzParseToken ./internal/jobjson:FuzzCheck ./internal/jobjson:FuzzPlainString ./pool:FuzzDecodeRecord ./internal/egress:FuzzCheckURL ./webhook:FuzzRetryAfter
fuzz:
	@failed=""; \
	for t in $(FUZZ_TARGETS); do \
	  GO=$(GO) FUZZTIME=$(FUZZTIME) ./scripts/fuzz-one.sh "$${t%%:*}" "$${t#*:}" || failed="$$failed $$t"; \
	done; \
	if [ -n "$$failed" ]; then echo "make fuzz: FAILED:$$failed"; exit 1; fi

# Throughput of the store and the HTTP API, with Redis's own EVALSHA rate as
# the ceiling, measured in one run (see docs/PERFORMANCE.md).
bench:
	$(GO) test -run '^$$' -bench . -benchtime 3s ./bench

# The full chaos tests: 100,000 jobs while the broker is SIGKILLed, while
# Redis is restarted, and while Redis is frozen (SIGSTOP) for 10 s, a fault
# every 3 seconds (make test runs a short version).
chaos:
	GMQ_CHAOS_JOBS=100000 GMQ_CHAOS_EVERY=3s GMQ_CHAOS_STALL=10s $(GO) test -count=1 -run '^TestChaos' -v -timeout 60m ./systemtest/chaos

clean:
	rm -f gmq
