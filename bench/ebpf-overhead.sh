#!/usr/bin/env bash
# ebpf-overhead.sh — what `serve --ebpf on` costs against `--ebpf off`:
# fsync-randwrite at 8 jobs (write IOPS, fsync p99) and `bench service` stat
# at 1 client, depth 1 (ops/s, p99), on a fresh server per run, the two modes
# alternated (off,on then on,off, ...) so that drift on a shared machine hits
# both alike. It reports the medians of ROUNDS runs each, the median of the
# per-round on/off ratios (the pairs ran back to back), and the server's CPU
# time and context switches per write in each mode. Then one more `on` run with the kernel's BPF
# statistics on (kernel.bpf_stats_enabled, which itself slows every program
# a little, so that run is not among the throughput figures) says how much
# CPU each BPF program took. Needs root (BPF), jq, bpftool.
#
# Usage: sudo bench/ebpf-overhead.sh               (3 rounds; ≈ 1.5 min)
#        ROUNDS=5 FSYNC_DURATION=10s bench/ebpf-overhead.sh
#        FEATURES=io_uring bench/ebpf-overhead.sh  (on: only these features, as serve --ebpf-features)
#        AA=1 bench/ebpf-overhead.sh               (an A/A run: the "on" arm runs
#                                                   --ebpf off too, so the paired
#                                                   figures are the method's noise)
#
# Besides the median of the paired ratios it prints their quartiles: on a
# shared 2-vCPU VM one pair can differ by more than the effect measured,
# and the spread (with an A/A run beside it) says how far to trust it.
#
# Results go to OUT (default bench/out/ebpf-overhead-<time>): one JSON per
# run (<round>-<mode>-fsync.json, -stat.json), the server's CPU ticks per
# fsync run (<round>-<mode>-cpu), serve logs, bpf-prog-time.txt,
# summary.txt.
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

# The server's device: a fully written 1 GiB image file (no holes, no
# unwritten extents), with a fresh filesystem per run. On a sparse file
# (serve --size) ext4 cannot take an O_DIRECT write without its inode's
# exclusive lock: io_uring punts every first write of a block to an io-wq
# worker, which queues on that lock in ext4_file_write_iter (1,087 rwsem
# waits of the server's in a 5 s fsync-randwrite at 8 jobs on a sparse file,
# 19 on a fully written one, docs/BENCHMARKS.md), and the run measures
# ext4's block allocation more than ustore or its probes.
img="$WORK/d.img"
dd if=/dev/zero of="$img" bs=1M count=1024 oflag=direct conv=fsync status=none
chmod 600 "$img" # serve refuses a data file others can read

run_one() { # round mode
	local round=$1 mode=$2 sock="$WORK/s.sock"
	rm -f "$sock"
	bin/ustore mkfs --force "$img" >/dev/null
	local features=()
	if [ "$mode" = on ] && [ -n "${FEATURES:-}" ]; then features=(--ebpf-features "$FEATURES"); fi
	local ebpf=$mode
	if [ "$mode" = on ] && [ -n "${AA:-}" ]; then ebpf=off; fi
	bin/ustore serve --device "$img" --socket "$sock" --ebpf "$ebpf" "${features[@]}" \
		>"$OUT/$round-$mode-serve.log" 2>&1 &
	local pid=$!
	for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
	local t0 t1 c0 c1
	t0=$(awk '{print $14+$15}' "/proc/$pid/stat")
	c0=$(ctxsw "$pid")
	[ "$round" = stats ] && bpf_progs "$pid" >"$WORK/progs-before.json" && date +%s%N >"$WORK/t0"
	bin/ustore bench fsync-randwrite --socket "$sock" --jobs 8 --duration "$FSYNC_DURATION" \
		--file-size 16M --json --progress never >"$OUT/$round-$mode-fsync.json"
	[ "$round" = stats ] && date +%s%N >"$WORK/t1" && bpf_progs "$pid" >"$WORK/progs-after.json"
	t1=$(awk '{print $14+$15}' "/proc/$pid/stat")
	c1=$(ctxsw "$pid")
	echo $((t1 - t0)) >"$OUT/$round-$mode-cpu"
	echo $((c1 - c0)) >"$OUT/$round-$mode-ctxsw"
	bin/ustore bench service --socket "$sock" --op stat --clients 1 --depth 1 --systems service \
		--duration "$STAT_DURATION" --json --progress never >"$OUT/$round-$mode-stat.json"
	kill -TERM "$pid"
	wait "$pid" || true
}

# ctxsw PID: the context switches of all of PID's threads so far, voluntary
# and not (a Go server's threads do not exit, so differences are the run's;
# the eBPF overhead of stop 22 showed as more of them, Go's sysmon waking).
ctxsw() {
	cat /proc/"$1"/task/*/status 2>/dev/null | awk '/^(non)?voluntary_ctxt_switches:/ {n += $2} END {print n}'
}

# bpf_progs PID lists the BPF programs process PID holds (the prog_id of
# its descriptors' fdinfo), with their run counts and times (bpftool leaves
# out counts that are 0).
bpf_progs() {
	local ids
	ids=$({ grep -h '^prog_id:' /proc/"$1"/fdinfo/* 2>/dev/null || true; } | awk '{print $2}' | sort -un | jq -sc .)
	bpftool prog show --json | jq -c --argjson ids "$ids" '[.[] | select(.id as $i | $ids | index($i)) | {id, name, run_cnt, run_time_ns}]'
}

for round in $(seq "$ROUNDS"); do
	if [ $((round % 2)) -eq 1 ]; then order="off on"; else order="on off"; fi
	for mode in $order; do
		echo "round $round: --ebpf $mode" >&2
		run_one "$round" "$mode"
	done
done

# One more `on` run with BPF statistics, for each program's CPU time.
echo "stats run: --ebpf on with kernel.bpf_stats_enabled=1" >&2
stats_was=$(sysctl -n kernel.bpf_stats_enabled)
sysctl -qw kernel.bpf_stats_enabled=1
run_one stats on
sysctl -qw kernel.bpf_stats_enabled="$stats_was"
wall_ns=$(($(cat "$WORK/t1") - $(cat "$WORK/t0")))
jq -r --slurpfile b "$WORK/progs-before.json" --argjson cpus "$(nproc)" --argjson wall "$wall_ns" '
	. as $a | ($b[0] | map({(.id | tostring): .}) | add) as $before |
	$a[] | ((.run_cnt // 0) - ($before[.id | tostring].run_cnt // 0)) as $n | ((.run_time_ns // 0) - ($before[.id | tostring].run_time_ns // 0)) as $ns |
	"  \(.name)\t\($n) runs\t\($ns / 1e6 * 10 | floor / 10) ms\t\(if $n > 0 then ($ns / $n | floor) else 0 end) ns/run\t\($ns / ($wall * $cpus) * 100 * 100 | floor / 100) % of \($cpus) CPUs"
' "$WORK/progs-after.json" >"$OUT/bpf-prog-time.txt"

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
# quartiles prints "q1..q3" of its input, by the nearest rank.
quartiles() { sort -g | awk '{v[NR]=$1} END {q1=int((NR+3)/4); q3=int((3*NR+3)/4); printf "%+.1f..%+.1f", v[q1], v[q3]}'; }
{
	echo "ebpf overhead: $ROUNDS rounds, fsync-randwrite 8 jobs $FSYNC_DURATION, stat 1x1 $STAT_DURATION; $(nproc) CPUs, $(uname -r)"
	printf "%-5s %16s %16s %14s %14s\n" mode write_iops fsync_p99_us stat_ops_s stat_p99_us
	for mode in off on; do
		iops=$(cat "$OUT"/[0-9]*-"$mode"-fsync.json | jq -r '.results[0].write_iops' | median)
		fp99=$(cat "$OUT"/[0-9]*-"$mode"-fsync.json | jq -r '.results[0].fsync.p99_us' | median)
		ops=$(cat "$OUT"/*-"$mode"-stat.json | jq -r '.results[0].ops_per_sec' | median)
		sp99=$(cat "$OUT"/*-"$mode"-stat.json | jq -r '.results[0].p99_us' | median)
		cpu=$(for f in "$OUT"/[0-9]*-"$mode"-fsync.json; do
			r=${f%-fsync.json}
			echo "$(cat "$r-cpu") $(jq -r '.results[0].write_iops' "$f")" | awk '{print $1 * 10000 / $2}'
		done | median)
		csw=$(for f in "$OUT"/[0-9]*-"$mode"-fsync.json; do
			r=${f%-fsync.json}
			echo "$(cat "$r-ctxsw") $(jq -r '.results[0].writes' "$f")" | awk '{print $1 / $2}'
		done | median)
		printf "%-5s %16.0f %16.0f %14.0f %14.1f   server CPU %.1f ms per 1000 writes/s, %.2f context switches per write\n" "$mode" "$iops" "$fp99" "$ops" "$sp99" "$cpu" "$csw"
	done
	changes() { # file-suffix jq-field: the per-round on/off ratios, as changes in %
		for round in $(seq "$ROUNDS"); do
			on=$(jq -r "$2" "$OUT/$round-on-$1.json")
			off=$(jq -r "$2" "$OUT/$round-off-$1.json")
			echo "$on $off" | awk '{print ($1 / $2 - 1) * 100}'
		done
	}
	ratio() { changes "$@" | median; }
	spread() { changes "$@" | quartiles; }
	[ -n "${AA:-}" ] && echo "A/A run: both arms --ebpf off; the paired figures are the method's noise"
	printf "paired on/off, median of %d rounds: write IOPS %+.1f %%, fsync p99 %+.1f %%, stat ops/s %+.1f %%, stat p99 %+.1f %%\n" "$ROUNDS" \
		"$(ratio fsync '.results[0].write_iops')" "$(ratio fsync '.results[0].fsync.p99_us')" \
		"$(ratio stat '.results[0].ops_per_sec')" "$(ratio stat '.results[0].p99_us')"
	printf "  quartiles of the paired changes: write IOPS %s %%, fsync p99 %s %%, stat ops/s %s %%, stat p99 %s %%\n" \
		"$(spread fsync '.results[0].write_iops')" "$(spread fsync '.results[0].fsync.p99_us')" \
		"$(spread stat '.results[0].ops_per_sec')" "$(spread stat '.results[0].p99_us')"
	echo "BPF programs during one fsync-randwrite run, its files' layout included (kernel.bpf_stats_enabled):"
	cat "$OUT/bpf-prog-time.txt"
	grep -h "ebpf on\|ebpf off" "$OUT"/1-on-serve.log "$OUT"/1-off-serve.log | head -2
} | tee "$OUT/summary.txt"
