#!/usr/bin/env bash
# ebpf-overhead.sh — what `serve --ebpf on` costs against `--ebpf off`:
# fsync-randwrite at 8 jobs (write IOPS, fsync p99) and `bench service` stat
# at 1 client, depth 1 (ops/s, p99), on a fresh server per run, the two modes
# alternated (off,on then on,off, ...) so that drift on a shared machine hits
# both alike; the medians of ROUNDS runs each. Needs root (BPF).
#
# Usage: sudo bench/ebpf-overhead.sh               (3 rounds; ≈ 1.5 min)
#        ROUNDS=5 FSYNC_DURATION=10s bench/ebpf-overhead.sh
#        FEATURES=io_uring bench/ebpf-overhead.sh  (on: only these features, as serve --ebpf-features)
#
# Results go to OUT (default bench/out/ebpf-overhead-<time>): one JSON per
# run (<round>-<mode>-fsync.json, -stat.json), serve logs, summary.txt.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
FSYNC_DURATION=${FSYNC_DURATION:-4s}
STAT_DURATION=${STAT_DURATION:-2s}
OUT=${OUT:-bench/out/ebpf-overhead-$(date -u +%Y%m%d-%H%M%S)}
WORK=$(mktemp -d /tmp/ustore-ebpf-overhead-XXXXXX)
trap 'rm -rf "$WORK"' EXIT

mkdir -p "$OUT" bin
go build -o bin/ustore ./cmd/ustore

run_one() { # round mode
	local round=$1 mode=$2 sock="$WORK/s.sock"
	rm -f "$WORK/d.img" "$sock"
	local features=()
	if [ "$mode" = on ] && [ -n "${FEATURES:-}" ]; then features=(--ebpf-features "$FEATURES"); fi
	bin/ustore serve --device "$WORK/d.img" --size 1G --socket "$sock" --ebpf "$mode" "${features[@]}" \
		>"$OUT/$round-$mode-serve.log" 2>&1 &
	local pid=$!
	for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
	bin/ustore bench fsync-randwrite --socket "$sock" --jobs 8 --duration "$FSYNC_DURATION" \
		--file-size 16M --json --progress never >"$OUT/$round-$mode-fsync.json"
	bin/ustore bench service --socket "$sock" --op stat --clients 1 --depth 1 --systems service \
		--duration "$STAT_DURATION" --json --progress never >"$OUT/$round-$mode-stat.json"
	kill -TERM "$pid"
	wait "$pid" || true
}

for round in $(seq "$ROUNDS"); do
	if [ $((round % 2)) -eq 1 ]; then order="off on"; else order="on off"; fi
	for mode in $order; do
		echo "round $round: --ebpf $mode" >&2
		run_one "$round" "$mode"
	done
done

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
{
	echo "ebpf overhead: $ROUNDS rounds, fsync-randwrite 8 jobs $FSYNC_DURATION, stat 1x1 $STAT_DURATION; $(nproc) CPUs, $(uname -r)"
	printf "%-5s %16s %16s %14s %14s\n" mode write_iops fsync_p99_us stat_ops_s stat_p99_us
	for mode in off on; do
		iops=$(cat "$OUT"/*-"$mode"-fsync.json | jq -r '.results[0].write_iops' | median)
		fp99=$(cat "$OUT"/*-"$mode"-fsync.json | jq -r '.results[0].fsync.p99_us' | median)
		ops=$(cat "$OUT"/*-"$mode"-stat.json | jq -r '.results[0].ops_per_sec' | median)
		sp99=$(cat "$OUT"/*-"$mode"-stat.json | jq -r '.results[0].p99_us' | median)
		printf "%-5s %16.0f %16.0f %14.0f %14.1f\n" "$mode" "$iops" "$fp99" "$ops" "$sp99"
	done
	grep -h "ebpf on\|ebpf off" "$OUT"/1-on-serve.log "$OUT"/1-off-serve.log | head -2
} | tee "$OUT/summary.txt"
