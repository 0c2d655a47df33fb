#!/usr/bin/env bash
# engine-vs-bbolt.sh — the engine's benchmarks (engine/bench_test.go), one
# summary: ustore against bbolt (random inserts and lookups), batch insert
# against one-by-one, commit latency by dirty nodes.
#
# Usage: bench/engine-vs-bbolt.sh [options]
#        bench/engine-vs-bbolt.sh --summarize bench/out/engine-vs-bbolt-YYYYmmdd-HHMMSS
#
# It builds the engine's test binary once, then runs, one after the other:
#   1. -bench '^BenchmarkEngineVsBbolt_Insert$'  -benchtime 1x -count COUNT
#   2. -bench '^BenchmarkEngineVsBbolt_Lookup$'  -benchtime 1x -count COUNT
#   3. -bench '^BenchmarkInsertItems_DirIndex$'  -benchtime 1x -count COUNT
#   4. -bench '^BenchmarkCommit_DirtyNodes$'     -benchtime COMMITS x -count COMMIT_COUNT
#   5. -bench 'BenchmarkEngineVsBbolt_Insert/writers=8' -benchtime 3x -cpuprofile
# in TMPDIR (the benchmarks' files go to the test's temporary directories),
# records the machine and the disk's I/O counters around each step, and
# prints the medians (with min and max) of every metric over the -count
# repetitions, the goal checks, and the CPU profile's top 10 for ustore's
# side of the insert benchmark (pprof label engine=ustore). Everything stays
# under bench/out/ (git-ignored).
#
# Options (each also settable by the environment variable in capitals):
#   --count N          COUNT         repetitions of steps 1-3       (5)
#   --commit-count N   COMMIT_COUNT  repetitions of step 4          (3)
#   --commits N        COMMITS       commits per case in step 4     (10)
#   --keys N           KEYS          keys of steps 1-2              (200000)
#   --out DIR          OUT           results directory (bench/out/engine-vs-bbolt-<date>)
#   --no-profile                     skip step 5 (PROFILE=0)
#   --summarize DIR    only print the summary of an earlier results directory
#   -h, --help         this text
#
# Needs: bash, go, python3. Takes about 5 minutes with the defaults on a
# 2-vCPU machine. Run it on an otherwise quiet machine: the disk is shared by
# both engines and by anything else running.
set -euo pipefail

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; }
die() { echo "engine-vs-bbolt: $*" >&2; exit 2; }

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

COUNT=${COUNT:-5}
COMMIT_COUNT=${COMMIT_COUNT:-3}
COMMITS=${COMMITS:-10}
KEYS=${KEYS:-200000}
OUT=${OUT:-}
PROFILE=${PROFILE:-1}
summarize_only=""

while (($#)); do
	case $1 in
	--count) COUNT=${2:?--count needs a value}; shift 2 ;;
	--commit-count) COMMIT_COUNT=${2:?--commit-count needs a value}; shift 2 ;;
	--commits) COMMITS=${2:?--commits needs a value}; shift 2 ;;
	--keys) KEYS=${2:?--keys needs a value}; shift 2 ;;
	--out) OUT=${2:?--out needs a value}; shift 2 ;;
	--no-profile) PROFILE=0; shift ;;
	--summarize) summarize_only=${2:?--summarize needs a directory}; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; die "unknown argument: $1" ;;
	esac
done

# summarize DIR: medians over repetitions per benchmark and metric, then the
# goal checks and the profile.
summarize() {
	python3 - "$1" <<'PY'
import collections, glob, os, re, statistics, sys

out = sys.argv[1]
vals = collections.defaultdict(lambda: collections.defaultdict(list))
order = []
for path in sorted(glob.glob(os.path.join(out, "step*.txt"))):
    with open(path) as f:
        for line in f:
            m = re.match(r"^(Benchmark\S+?)(?:-\d+)?\s+(\d+)\s+(.*)$", line)
            if not m:
                continue
            name, fields = m.group(1), m.group(3).split()
            if name not in vals:
                order.append(name)
            for v, unit in zip(fields[0::2], fields[1::2]):
                vals[name][unit].append(float(v))

def fmt(x):
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    if abs(x) >= 0.1:
        return f"{x:.2f}"
    return f"{x:.4f}"

def med(name, unit):
    v = vals.get(name, {}).get(unit)
    return statistics.median(v) if v else float("nan")

for name in order:
    n = len(next(iter(vals[name].values())))
    print(f"{name}  (n={n}: median [min, max])")
    for unit, v in sorted(vals[name].items()):
        print(f"  {unit:36s} {fmt(statistics.median(v)):>12s}  [{fmt(min(v))}, {fmt(max(v))}]")
    print()

print("goals (medians over repetitions of the per-run ratios):")
for w in (1, 8):
    b = f"BenchmarkEngineVsBbolt_Insert/writers={w}"
    for unit, what in (("ustore/bbolt", "commit waited for"), ("ustore-pipelined/bbolt", "commits pipelined")):
        r = med(b, unit)
        goal = 2.0 if w == 8 else None
        verdict = "" if goal is None else (" -> met" if r >= goal else " -> NOT MET")
        g = f" (goal >= {goal:.0f}x)" if goal else ""
        print(f"  insert, {w} writer(s), {what}: ustore/bbolt = {fmt(r)}{g}{verdict}")
for r_ in (1, 8):
    b = f"BenchmarkEngineVsBbolt_Lookup/readers={r_}"
    for unit, what in (("ustore/bbolt", "bbolt: a read tx per lookup"), ("ustore/bbolt-1tx", "bbolt: one read tx for all")):
        r = med(b, unit)
        print(f"  lookup, {r_} reader(s), {what}: ustore/bbolt = {fmt(r)} (goal >= 1x)" + (" -> met" if r >= 1 else " -> NOT MET"))
PY
	if [[ -f $1/cpu-insert8.prof && -f $1/engine.test ]]; then
		echo
		echo "CPU profile, insert writers=8, ustore's side (-tagfocus 'engine=^ustore$'):"
		go tool pprof -tags "$1/engine.test" "$1/cpu-insert8.prof" 2>/dev/null | sed -n '1,6p'
		go tool pprof -top -nodecount=10 -tagfocus 'engine=^ustore$' "$1/engine.test" "$1/cpu-insert8.prof" 2>/dev/null | sed -n '/flat%/,$p'
		echo
		go tool pprof -top -cum -nodecount=20 -tagfocus 'engine=^ustore$' "$1/engine.test" "$1/cpu-insert8.prof" 2>/dev/null | sed -n '/flat%/,$p'
	fi
}

if [[ -n $summarize_only ]]; then
	summarize "$summarize_only"
	exit 0
fi

OUT=${OUT:-bench/out/engine-vs-bbolt-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
disk=$(df --output=source "${TMPDIR:-/tmp}" | tail -1)
dev=$(basename "$disk")
{
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo '?') ($(git status --porcelain -- engine | wc -l) changed files under engine/)"
	echo "go: $(go version)"
	echo "kernel: $(uname -r)"
	echo "cpus: $(nproc) x $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
	echo "memory: $(free -g | awk '/Mem:/ {print $2 " GiB"}')"
	echo "tmpdir: ${TMPDIR:-/tmp} on $disk ($(findmnt -no FSTYPE --target "${TMPDIR:-/tmp}"))"
	echo "disk: $dev rotational=$(cat /sys/block/"$dev"/queue/rotational 2>/dev/null || echo ?) scheduler=$(cat /sys/block/"$dev"/queue/scheduler 2>/dev/null || echo ?)"
	echo "params: COUNT=$COUNT COMMIT_COUNT=$COMMIT_COUNT COMMITS=$COMMITS KEYS=$KEYS"
} | tee "$OUT/machine.txt"

go test -c -o "$OUT/engine.test" ./engine

# step N NAME ARGS...: one run of the test binary, its output kept, the
# disk's counters (/sys/block/DEV/stat) before and after.
step() {
	local n=$1 name=$2
	shift 2
	echo "== step $n: $name: engine.test $*" | tee -a "$OUT/commands.txt"
	cat "/sys/block/$dev/stat" >"$OUT/step$n-diskstat-before" 2>/dev/null || true
	(cd "$OUT" && ./engine.test -test.run '^$' "$@") | tee "$OUT/step$n.txt"
	cat "/sys/block/$dev/stat" >"$OUT/step$n-diskstat-after" 2>/dev/null || true
}

step 1 insert -test.bench '^BenchmarkEngineVsBbolt_Insert$' -test.benchtime 1x -test.count "$COUNT" -engine.bench.keys "$KEYS"
step 2 lookup -test.bench '^BenchmarkEngineVsBbolt_Lookup$' -test.benchtime 1x -test.count "$COUNT" -engine.bench.keys "$KEYS"
step 3 batch -test.bench '^BenchmarkInsertItems_DirIndex$' -test.benchtime 1x -test.count "$COUNT"
step 4 commit -test.bench '^BenchmarkCommit_DirtyNodes$' -test.benchtime "${COMMITS}x" -test.count "$COMMIT_COUNT"
if ((PROFILE)); then
	# Its figures are not summarized (the profiler perturbs them): the
	# profile is what it is for.
	echo "== step 5: profile: engine.test -test.bench 'BenchmarkEngineVsBbolt_Insert/writers=8' -test.benchtime 3x -test.cpuprofile cpu-insert8.prof" | tee -a "$OUT/commands.txt"
	(cd "$OUT" && ./engine.test -test.run '^$' -test.bench '^BenchmarkEngineVsBbolt_Insert$/^writers=8$' \
		-test.benchtime 3x -engine.bench.keys "$KEYS" -test.cpuprofile cpu-insert8.prof) >"$OUT/profile-run.txt"
fi

summarize "$OUT" | tee "$OUT/summary.txt"
echo "results: $OUT"
