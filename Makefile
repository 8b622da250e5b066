# gmq: `make run` sets up and starts the broker; `make test` runs every test.
GO ?= go
# A count, not a duration: a -fuzztime duration races Go's fuzz coordinator
# (golang.org/issue/75804, unfixed in Go 1.26) and fails a target with a bare
# "context deadline exceeded" and no crasher when a loaded machine slows a
# worker; CI failed that way on beanstalk's FuzzReadRequest.
FUZZTIME ?= 10000x

.PHONY: run build test test-deps fuzz bench chaos vet clean

run:
	./scripts/run.sh

build:
	$(GO) build -o gmq .

vet:
	$(GO) vet ./...
	cd bench/asynq && $(GO) vet .  # its own module: asynq stays out of gmq's go.mod
	cd client && $(GO) vet ./...  # the Go client's own module (standard library only)
	@test -z "$$(gofmt -l .)" || { echo "gofmt would change:"; gofmt -l .; exit 1; }

# Every test, with the race detector, against real redis-servers the tests
# start on free ports; then each fuzz target for a bounded time. It first
# installs what a fresh Debian machine lacks (scripts/test-deps.sh).
test: test-deps vet
	$(GO) test -race -count=1 -timeout 8m ./...
	cd client && $(GO) test -race -count=1 ./...
	$(MAKE) fuzz

test-deps:
	./scripts/test-deps.sh

# Each parser's fuzz target, for FUZZTIME. Every plain `go test` also replays
# the seeds in the code and the corpora kept in <package>/testdata/fuzz/
# (inputs the fuzzer found; copy new ones from $$(go env GOCACHE)/fuzz).
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParsePush$$' -fuzztime $(FUZZTIME) ./web
	$(GO) test -run '^$$' -fuzz '^FuzzParsePop$$' -fuzztime $(FUZZTIME) ./web
	$(GO) test -run '^$$' -fuzz '^FuzzParseJobCall$$' -fuzztime $(FUZZTIME) ./web
	$(GO) test -run '^$$' -fuzz '^FuzzParseAcks$$' -fuzztime $(FUZZTIME) ./web
	$(GO) test -run '^$$' -fuzz '^FuzzParsePage$$' -fuzztime $(FUZZTIME) ./web
	$(GO) test -run '^$$' -fuzz '^FuzzParseUpdate$$' -fuzztime $(FUZZTIME) ./web
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./config
	$(GO) test -run '^$$' -fuzz '^FuzzReadRequest$$' -fuzztime $(FUZZTIME) ./beanstalk
	$(GO) test -run '^$$' -fuzz '^FuzzParseJob$$' -fuzztime $(FUZZTIME) ./gmqrpc
	$(GO) test -run '^$$' -fuzz '^FuzzReadValue$$' -fuzztime $(FUZZTIME) ./gmqrpc
	$(GO) test -run '^$$' -fuzz '^FuzzReadRequest$$' -fuzztime $(FUZZTIME) ./kestrel
	$(GO) test -run '^$$' -fuzz '^FuzzLooksLikeHTTP$$' -fuzztime $(FUZZTIME) ./internal/tcpserver

# Throughput of the store and the HTTP API, with Redis's own EVALSHA rate as
# the ceiling, measured in one run (see docs/PERFORMANCE.md).
bench:
	$(GO) test -run '^$$' -bench . -benchtime 3s ./bench

# The full chaos tests: 100,000 jobs while the broker is SIGKILLed, while
# Redis is restarted, and while Redis is frozen (SIGSTOP) for 10 s, a fault
# every 3 seconds (make test runs a short version).
chaos:
	GMQ_CHAOS_JOBS=100000 GMQ_CHAOS_EVERY=3s GMQ_CHAOS_STALL=10s $(GO) test -count=1 -run '^TestChaos' -v -timeout 60m .

clean:
	rm -f gmq
