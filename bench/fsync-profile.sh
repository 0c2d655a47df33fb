#!/usr/bin/env bash
# fsync-profile.sh — where a ustore fsync's time goes: fsync-randwrite
# against a server started with --pprof, a CPU profile of the server taken in
# the middle of the run, and the server's counters.
#
# Usage: bench/fsync-profile.sh                 (8 jobs, 20 s; ≈ 40 s with the set-up)
#        JOBS=16 DURATION=30s bench/fsync-profile.sh
#        SERVE_FLAGS=--ablate-log-leaf-search bench/fsync-profile.sh
#        NODESIZE=4k bench/fsync-profile.sh   (the tree node size mkfs gives; default 16k)
#
# The image is IMG (default ustore-data/fsync-bench/profile.img, 2 GiB),
# written in full on first use (a sparse image doubles the cost of a flush:
# fdatasync p50 243 µs against 104 µs through a loop device on the
# benchmark VM,
# docs/BENCHMARKS.md "fsync (issue 6)") and formatted for every run. Results go
# to OUT (default bench/out/fsync-profile-<time>): bench.txt (the workload's
# report with the server's counters), cpu.prof (go tool pprof bin/ustore
# OUT/cpu.prof), perf.txt and fsyncs.txt (the server's CPU and context
# switches per fsync, printed with the report; needs perf), serve.log,
# machine.txt.
set -euo pipefail
cd "$(dirname "$0")/.."

JOBS=${JOBS:-8}
NODESIZE=${NODESIZE:-16k}
DURATION=${DURATION:-20s}
IMG=${IMG:-ustore-data/fsync-bench/profile.img}
OUT=${OUT:-bench/out/fsync-profile-$(date -u +%Y%m%d-%H%M%S)}
SOCK=$(mktemp -u /tmp/ustore-profile-XXXXXX.sock)
METRICS=127.0.0.1:${METRICS_PORT:-9479}

mkdir -p "$OUT" "$(dirname "$IMG")" bin
go build -o bin/ustore ./cmd/ustore
if [ ! -f "$IMG" ]; then
	dd if=/dev/zero of="$IMG" bs=4M count=512 oflag=direct status=none
fi
chmod 600 "$IMG" # serve refuses a data file others can read
{ date -u; uname -r; nproc; uptime; git rev-parse HEAD; git status --short; } > "$OUT/machine.txt"
bin/ustore mkfs --force --size 2G --nodesize "$NODESIZE" "$IMG" > /dev/null # the last run's filesystem
# shellcheck disable=SC2086 # SERVE_FLAGS is a list of flags
bin/ustore serve --device "$IMG" --socket "$SOCK" --metrics-addr "$METRICS" --pprof ${SERVE_FLAGS:-} > "$OUT/serve.log" 2>&1 &
server=$!
trap 'kill -TERM $server 2>/dev/null || true; wait $server 2>/dev/null || true; rm -f "$SOCK"' EXIT
for _ in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.1; done
[ -S "$SOCK" ] || { echo "the server did not start: $OUT/serve.log" >&2; exit 1; }

# fsyncs_now prints the server's fsyncs so far, every outcome together.
fsyncs_now() {
	curl -sf "http://$METRICS/metrics" |
		awk '/^ustore_store_fsync_(logged|commit|committed|in_log)_total /{s+=$2} END{printf "%d\n", s}'
}

# The profile covers the middle half of the run, and so does perf stat on
# the server (when perf is installed): its CPU and context switches over
# the fsyncs the server counted meanwhile are the cost of a cycle (the
# job's writes and its fsync), the figure issue 11 reports.
secs=${DURATION%s}
( sleep $((secs / 4)); curl -sf -o "$OUT/cpu.prof" "http://$METRICS/debug/pprof/profile?seconds=$((secs / 2))" ) &
prof=$!
(
	sleep $((secs / 4))
	before=$(fsyncs_now)
	if command -v perf > /dev/null; then
		perf stat -x, -e task-clock,context-switches -p "$server" -- sleep $((secs / 2)) 2> "$OUT/perf.txt" || true
	else
		sleep $((secs / 2))
	fi
	echo "$before $(fsyncs_now)" > "$OUT/fsyncs.txt"
) &
cost=$!
bin/ustore bench fsync-randwrite --socket "$SOCK" --metrics "$METRICS" --jobs "$JOBS" --duration "$DURATION" > "$OUT/bench.txt"
wait $prof $cost
uptime >> "$OUT/machine.txt"
cat "$OUT/bench.txt"
echo
if [ -s "$OUT/perf.txt" ]; then
	read -r before after < "$OUT/fsyncs.txt"
	awk -F, -v n=$((after - before)) '
		$3 == "task-clock" { cpu = $1 }        # milliseconds
		$3 == "context-switches" { cs = $1 }
		END {
			if (n > 0) printf "server, middle half of the run: %d fsyncs, %.0f µs of CPU and %.1f context switches per fsync (with its writes)\n\n", n, cpu * 1000 / n, cs / n
		}' "$OUT/perf.txt"
fi
go tool pprof -top -nodecount=25 bin/ustore "$OUT/cpu.prof" 2>/dev/null | sed -n '4,35p'
echo "results: $OUT"
