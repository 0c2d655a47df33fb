# ustore — the developer's targets. `make check` is what CI runs.
GO        ?= go
STATICCHECK = $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2
FUZZTIME  ?= 20s
# The live server's fuzz target: each input is a connection to a real
# server, a few ms each, so CI gives it fewer inputs than the decoders.
FUZZTIME_SERVER ?= $(FUZZTIME)

.PHONY: all build test race norace lint fmt-check check invariants fuzz bench run clean jaeger generate bpf-fresh readme-walk

all: build

build:
	$(GO) build -o ustore ./cmd/ustore

## test: every test, as a developer runs them
test:
	$(GO) test ./...

## race: every test under the race detector. The timeout is per package:
## cmd/ustore's tests (real servers, mounts and tools under -race) ran
## past go test's default 10 minutes on a loaded 2-core machine; a hung
## test still fails, at 30.
race:
	$(GO) test -race -timeout 30m ./...

## norace: the tests the race detector makes too slow or meaningless (a
## memory bound measures the race runtime, not the store; they skip
## under -race), run once without it so that CI runs them too
norace:
	$(GO) test -count=1 -run '^TestDataDriven$$/^bulk$$' ./logtree
	$(GO) test -count=1 -run '^TestMount_(StressNG|SQLiteWAL|Rsync|Sysbench)$$' ./cmd/ustore
	$(GO) test -count=1 -run '^TestMem_(InodesAndData|Writer)$$' ./store

## lint: gofmt, go vet and staticcheck
lint: fmt-check
	$(GO) vet ./...
	$(STATICCHECK) ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

## invariants: the tests of the packages with expensive checks behind the
## invariants build tag (engine, evict), with those checks on (evict's
## whole-shard check after every change made its tests 385 s on 2 cores:
## the timeout leaves room on a slower machine)
invariants:
	$(GO) test -tags invariants -timeout 30m ./engine/... ./evict/...

## readme-walk: run README.md's sh blocks against a real server and Jaeger
## (internal/readmetest, ~30 s; `make race`, so `make check`, runs it too)
readme-walk:
	$(GO) test -count=1 -run '^TestReadme_Walk$$' ./internal/readmetest

## check: lint, every test under the race detector, the ones it makes too
## slow without it, the invariants build (CI runs this)
check: lint race norace invariants

## fuzz: each fuzz target for FUZZTIME: a duration (20s) or a count of
## inputs (100000x). CI gives a count: with a duration, Go 1.26's fuzz
## coordinator can fail a target that found nothing with "context deadline
## exceeded" when a busy worker misses the deadline (go.dev/issue/75804,
## fixed in Go 1.27); a count has no deadline to race.
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzCheckIO$$' -fuzztime $(FUZZTIME) ./dev
	$(GO) test -run '^$$' -fuzz '^FuzzParseBytes$$' -fuzztime $(FUZZTIME) ./cmd/ustore
	$(GO) test -run '^$$' -fuzz '^FuzzExtentBuffer_Verify$$' -fuzztime $(FUZZTIME) ./engine
	$(GO) test -run '^$$' -fuzz '^FuzzSuperblock_Choose$$' -fuzztime $(FUZZTIME) ./engine
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeXattrEntries$$' -fuzztime $(FUZZTIME) ./engine
	$(GO) test -run '^$$' -fuzz '^FuzzReadFrame$$' -fuzztime $(FUZZTIME) ./proto
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeRequest$$' -fuzztime $(FUZZTIME) ./proto
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeReply$$' -fuzztime $(FUZZTIME) ./proto
	$(GO) test -run '^$$' -fuzz '^FuzzServer_Frames$$' -fuzztime $(FUZZTIME_SERVER) ./server

## bench: the ring against fio and a pread pool, one table (takes ~25 min)
bench:
	bash bench/ring-vs-fio.sh

## run: the main job — the service on ustore-data/ustore.img (created on first start)
run: build
	./ustore serve

## generate: the BPF objects and their Go bindings in ebpf/ (bpf2go; needs
## clang-14, llvm-strip-14 and libbpf-dev's headers)
generate:
	$(GO) generate ./ebpf

## bpf-fresh: regenerate the committed BPF objects and fail when they differ
## from what is committed (bpf2go's output is byte-for-byte reproducible)
bpf-fresh: generate
	@out=$$(git status --porcelain -- ebpf); if [ -n "$$out" ]; then echo "ebpf/: generated files differ from the committed ones (run make generate and commit):"; echo "$$out"; git diff --stat -- ebpf; exit 1; fi

## jaeger: bin/jaeger, the trace store the tracing tests export to, built from
## the version tools/go.mod pins (a cold build takes minutes and ~2.3 GB of
## memory; skipped while bin/jaeger is newer than tools/go.mod and go.sum)
jaeger: bin/jaeger

bin/jaeger: tools/go.mod tools/go.sum
	mkdir -p bin
	$(GO) -C tools build -o ../bin/jaeger.tmp github.com/jaegertracing/jaeger/cmd/jaeger
	mv bin/jaeger.tmp bin/jaeger

clean:
	rm -f ustore
