#!/usr/bin/env bash
# tracing-cost.sh — what tracing costs a server in its own process:
# `bench service --op stat,write --clients 8 --depth 16` against a fresh
# `ustore serve` per run, in three modes alternated within each round so
# that drift on a shared machine hits all alike:
#   off     no OTLP endpoint: tracing off
#   ratio1  spans to a real Jaeger, OTEL_TRACES_SAMPLER=parentbased_traceidratio
#           OTEL_TRACES_SAMPLER_ARG=0.01 (the default sampler, named)
#   all     spans to the same Jaeger, OTEL_TRACES_SAMPLER=parentbased_always_on
# It prints one line a run: ops/s of each op, the server's CPU seconds
# and Jaeger's CPU seconds during the run. Jaeger is bin/jaeger (`make
# jaeger`), on ports of its own (24317/24318 OTLP, 26685/26686 query,
# 23133 health), with in-memory storage.
#
# Usage: bench/tracing-cost.sh                     (3 rounds of 2 s cells; ≈ 1.5 min)
#        ROUNDS=5 DURATION=3s MODES="off ratio1" bench/tracing-cost.sh
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-2s}
MODES=${MODES:-off ratio1 all}
[ -x bin/jaeger ] || make jaeger
work=$(mktemp -d /tmp/ustore-tracing-cost-XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
go build -o "$work/ustore" ./cmd/ustore
bin=$work/ustore

. bench/jaeger.sh # the scripts run from the repository root
start_jaeger "$work" 24317 24318 26685 26686 23133
jaeger=$jaeger_pid

cpu() { awk '{printf "%.2f", ($14+$15)/100}' "/proc/$1/stat"; }

run() { # mode, then the server's environment
	local mode=$1
	shift
	rm -f "$work/s.sock" "$work/d.img"
	env $(otel_unset) "$@" "$bin" serve --device "$work/d.img" --size 512M \
		--socket "$work/s.sock" --commit-interval 5m --ebpf off 2>"$work/serve-$mode.log" &
	local sp=$!
	for i in $(seq 200); do [ -S "$work/s.sock" ] && break; sleep 0.05; done
	local j0 j1 s1
	j0=$(cpu "$jaeger")
	"$bin" bench service --socket "$work/s.sock" --op stat,write --clients 8 --depth 16 --systems service \
		--duration "$DURATION" --progress never --json >"$work/out.json"
	s1=$(cpu "$sp")
	j1=$(cpu "$jaeger")
	kill "$sp"
	wait "$sp" || true
	printf '%-6s %s server_cpu_s=%s jaeger_cpu_s=%.2f\n' "$mode" \
		"$(jq -r '[.results[] | "\(.op)=\(.ops_per_sec | floor)"] | join(" ")' "$work/out.json")" \
		"$s1" "$(echo "$j1 - $j0" | bc)"
}

for r in $(seq "$ROUNDS"); do
	for mode in $MODES; do
		case $mode in
		off) run off ;;
		ratio1) run ratio1 OTEL_EXPORTER_OTLP_ENDPOINT=127.0.0.1:24318 \
			OTEL_TRACES_SAMPLER=parentbased_traceidratio OTEL_TRACES_SAMPLER_ARG=0.01 ;;
		all) run all OTEL_EXPORTER_OTLP_ENDPOINT=127.0.0.1:24318 OTEL_TRACES_SAMPLER=parentbased_always_on ;;
		*) echo "tracing-cost: unknown mode $mode" >&2; exit 2 ;;
		esac
	done
done
