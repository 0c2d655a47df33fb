#!/usr/bin/env bash
# meta-vs-ext4.sh — `ustore bench meta` on ustore serve and on ext4 on a loop
# device, alternately, in one run; a ratio table.
#
# Usage: sudo bench/meta-vs-ext4.sh                     (as root: loop device, mkfs, mount)
#        sudo REPS=1 BIG_DIR=1000000 bench/meta-vs-ext4.sh
#        bench/meta-vs-ext4.sh --summarize bench/out/meta-vs-ext4-YYYYmmdd-HHMMSS
#
# Each run is `ustore bench meta` (bench/metabench): the same Go code on a
# ustore server (--socket, through the client, one connection per client) and
# on ext4's directory (--dir, through the system calls), each on a fresh
# filesystem:
#   ustore  `ustore mkfs` on a fully written image file, then `ustore serve
#           --device IMG` in a process of its own
#   ext4    mkfs.ext4 -F -E nodiscard,lazy_itable_init=0,lazy_journal_init=0 on
#           `losetup --direct-io=on` over another fully written image file
# Both image files sit in IMG_DIR on the same disk (never tmpfs). Each
# repetition runs both, the first system alternating between repetitions;
# the summary takes medians. Each run also times the echo reference (`ustore
# bench echo-server`, a process of its own) with each op's frame sizes, so
# that at one client each op's p50 is in echo round trips.
#
# With curl installed, the create queue's counters (ustore_store_create_batches_total,
# ustore_store_creates_batched_total) are read from serve's /metrics after its
# run: the summary says how many of the run's creates were made in batches.
#
# With PERF=1 (and perf installed), the context switches of the server per
# create: `perf stat -e context-switches -p <serve>` around `ustore bench
# dir-fsync --files PERF_FILES --keep` (its creates are one at a time on one
# connection, then 1000 deletes), divided by PERF_FILES.
#
# Settings (environment variables):
#   IMG_DIR     image files' directory (ustore-data/meta-bench, on /)
#   IMG_SIZE    each image file (4G)
#   CLIENTS     1,8,64      FILES   10000   BIG_DIR 100000 (the issue's: 1000000)   DELETES 1000
#   REPS        3           repetitions (ustore and ext4 each)
#   PERF        1           PERF_FILES 20000
#   SERVE_FLAGS ""          more flags for `ustore serve`
#   OUT         bench/out/meta-vs-ext4-<date>
#   USTORE      run this ustore binary instead of building bin/ustore
#
# Needs: root, bash, go, python3, util-linux (losetup), e2fsprogs.
set -euo pipefail

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; }
die() { echo "meta-vs-ext4: $*" >&2; exit 2; }
say() { echo "meta-vs-ext4: $*" >&2; }

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

summarize_only=""
case ${1:-} in
-h | --help) usage; exit 0 ;;
--summarize) summarize_only=${2:?--summarize needs a directory} ;;
"") ;;
*) usage >&2; die "unknown argument: $1" ;;
esac

IMG_DIR=${IMG_DIR:-ustore-data/meta-bench}
IMG_SIZE=${IMG_SIZE:-4G}
CLIENTS=${CLIENTS:-1,8,64}
FILES=${FILES:-10000}
BIG_DIR=${BIG_DIR:-100000}
DELETES=${DELETES:-1000}
REPS=${REPS:-3}
PERF=${PERF:-1}
PERF_FILES=${PERF_FILES:-20000}
OUT=${OUT:-bench/out/meta-vs-ext4-$(date -u +%Y%m%d-%H%M%S)}
USTORE=${USTORE:-}
SERVE_FLAGS=${SERVE_FLAGS:-}

# summarize DIR: medians over the repetitions; ustore over ext4.
summarize() {
	python3 - "$1" <<'PY'
import glob, json, os, re, statistics, sys

out = sys.argv[1]
def load(p):
    try:
        return json.load(open(p))
    except (OSError, ValueError):
        return None
fig = {}  # (system, op, clients) → lists
for s in ("ustore", "ext4"):
    for p in sorted(glob.glob(os.path.join(out, f"rep*-{s}.json"))):
        rep = load(p)
        for r in (rep or {}).get("results", []):
            k = (s, r["op"], r["clients"])
            f = fig.setdefault(k, {"ops": [], "p50": [], "p99": [], "echo": []})
            f["ops"].append(r["ops_per_sec"]); f["p50"].append(r["p50_us"]); f["p99"].append(r["p99_us"])
            if r.get("over_echo"):
                f["echo"].append(r["over_echo"])
med = lambda v: statistics.median(v) if v else None
f0 = lambda x: "-" if x is None else f"{x:,.0f}"
f1 = lambda x: "-" if x is None else f"{x:,.1f}"
f2 = lambda x: "-" if x is None else f"{x:.2f}"
print(open(os.path.join(out, "machine.txt")).read().rstrip())
reps = len(glob.glob(os.path.join(out, "rep*-ustore.json")))
print(f"\nmedians of {reps} repetition(s); ops/s, p50 and p99 in µs; 'p50/echo' at 1 client\n")
print("| op | clients | ustore ops/s | ext4 ops/s | ustore/ext4 | ustore p50 | p99 | ext4 p50 | p99 | ustore p50/echo | ext4 p50/echo |")
print("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
ops = ["create", "stat", "rename", "unlink", "mkdir", "rmdir", "readdir", "delete"]
clients = sorted({k[2] for k in fig})
for op in ops:
    for c in clients:
        u, e = fig.get(("ustore", op, c)), fig.get(("ext4", op, c))
        if not u and not e:
            continue
        g = lambda f, key: med(f[key]) if f else None
        uo, eo = g(u, "ops"), g(e, "ops")
        print(f"| {op} | {c} | {f0(uo)} | {f0(eo)} | {f2(uo / eo if uo and eo else None)} | {f1(g(u, 'p50'))} | "
              f"{f1(g(u, 'p99'))} | {f1(g(e, 'p50'))} | {f1(g(e, 'p99'))} | {f2(g(u, 'echo'))} | {f2(g(e, 'echo'))} |")
# The create queue's counters: every create and mkdir of the run, and the
# big directory's fill, go through it (made alone or in a batch).
cmd = open(os.path.join(out, "machine.txt")).read()
def num(k):
    m = re.search(rf"\b{k}=([0-9]+)", cmd)
    return int(m.group(1)) if m else 0
cl = re.search(r"\bCLIENTS=([0-9,]+)", cmd)
made = 2 * num("FILES") * (len(cl.group(1).split(",")) if cl else 0) + num("BIG_DIR")
for p in sorted(glob.glob(os.path.join(out, "rep*-ustore.metrics"))):
    c = {l.split()[0]: float(l.split()[1]) for l in open(p) if l.strip()}
    passes, batched = c.get("ustore_store_create_batches_total", 0), c.get("ustore_store_creates_batched_total", 0)
    frac = f", {batched / made:.2f} of the run's {made:,} creates, mkdirs and big-directory entries" if made else ""
    print(f"\n{os.path.basename(p)}: {batched:,.0f} creates made in {passes:,.0f} batches "
          f"(mean {batched / passes if passes else 0:.1f}){frac}")
cs = [l for p in sorted(glob.glob(os.path.join(out, "rep*-perf.txt"))) for l in open(p) if l.startswith("per create")]
if cs:
    print("\nserver context switches per create (perf stat, bench dir-fsync):", "; ".join(l.split(":", 1)[1].strip() for l in cs))
PY
}

if [[ -n $summarize_only ]]; then
	summarize "$summarize_only"
	exit 0
fi

((EUID == 0)) || die "run as root: it makes a loop device and a filesystem and mounts it"
[[ $REPS =~ ^[1-9][0-9]*$ ]] || die "REPS must be a positive integer, not '$REPS'"
for tool in mkfs.ext4 losetup python3; do
	command -v "$tool" >/dev/null 2>&1 || die "$tool is needed"
done
if ((PERF)) && ! command -v perf >/dev/null 2>&1; then
	say "no perf: the context switches are not measured"
	PERF=0
fi

if [[ -n $USTORE ]]; then
	ustore=$USTORE
	[[ -x $ustore ]] || die "USTORE=$ustore is not an executable"
else
	mkdir -p bin
	ustore=bin/ustore
	say "building $ustore"
	go build -o "$ustore" ./cmd/ustore
fi

mkdir -p "$OUT" "$IMG_DIR"
fstype=$(findmnt -n -o FSTYPE -T "$IMG_DIR")
[[ $fstype != tmpfs && $fstype != ramfs ]] || die "IMG_DIR $IMG_DIR is on $fstype: put the images on the disk"
img_bytes=$(numfmt --from=iec "${IMG_SIZE%B}")

# layout, cleanup, drop_caches, peer_up, peer_down, serve, unserve.
source "$repo/bench/peers.sh"

peer_img=$IMG_DIR/peer.img
ustore_img=$IMG_DIR/ustore.img
layout "$peer_img" "$img_bytes"
layout "$ustore_img" "$img_bytes"
mnt=$IMG_DIR/mnt
mkdir -p "$mnt"
trap cleanup EXIT
trap 'exit 130' INT TERM

{
	echo "date:    $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
	echo "host:    $(uname -srm); $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(free -g | awk '/^Mem:/ { print $2 }') GiB RAM"
	echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min, at start)"
	echo "images:  $IMG_DIR ($(findmnt -n -o FSTYPE -T "$IMG_DIR")), $IMG_SIZE each, fully written; ext4 on loop --direct-io=on, $(mkfs.ext4 -V 2>&1 | head -n 1)"
	echo "ustore:  $(if [[ -n $USTORE ]]; then echo "$ustore (USTORE)"; else echo "$(git rev-parse --short HEAD) + $(git status --porcelain | wc -l) uncommitted paths"; fi); $(go version | cut -d' ' -f3)"
	echo "command: CLIENTS=$CLIENTS FILES=$FILES BIG_DIR=$BIG_DIR DELETES=$DELETES REPS=$REPS bench/meta-vs-ext4.sh${SERVE_FLAGS:+ (SERVE_FLAGS=\"$SERVE_FLAGS\")}"
} >"$OUT/machine.txt"
cat "$OUT/machine.txt" >&2

args=(meta --clients "$CLIENTS" --files "$FILES" --big-dir "$BIG_DIR" --deletes "$DELETES" --json --progress never)
failures=0
run() {
	local json=$1 rc=0
	shift
	say "  ustore bench $*"
	timeout 3600 "$ustore" bench "$@" >"$json" 2>"${json%.json}.stderr" || rc=$?
	if ((rc != 0)); then
		failures=$((failures + 1))
		say "FAILED (rc $rc): ustore bench $*"
		sed 's/^/    /' "${json%.json}.stderr" >&2
		rm -f "$json"
	fi
}
on_ustore() {
	serve "$ustore_img" "$OUT/rep$1-ustore.serve.log"
	run "$OUT/rep$1-ustore.json" "${args[@]}" --socket "$sock" --label ustore
	# The create queue's counters over the run (its creates, mkdirs and
	# the big directory's fill): how many were made in batches.
	if command -v curl >/dev/null 2>&1; then
		curl -s "$metrics" | grep -E '^ustore_store_(create_batches|creates_batched)_total ' >"$OUT/rep$1-ustore.metrics" ||
			say "no create-queue counters on $metrics"
	fi
	if ((PERF)); then
		# The server's context switches around creates one at a time.
		local pid=${servers[-1]}
		perf stat -e context-switches -x, -o "$OUT/rep$1-perf.csv" -p "$pid" -- \
			"$ustore" bench dir-fsync --files "$PERF_FILES" --keep --socket "$sock" --progress never >/dev/null 2>&1 ||
			say "perf stat failed"
		awk -F, -v n="$PERF_FILES" '$3 == "context-switches" { printf "per create: %.2f (%d over %d creates)\n", $1 / n, $1, n }' \
			"$OUT/rep$1-perf.csv" >"$OUT/rep$1-perf.txt" || true
	fi
	unserve
}
on_ext4() {
	peer_up ext4 16K $((BIG_DIR + FILES + 100000))
	run "$OUT/rep$1-ext4.json" "${args[@]}" --dir "$mnt" --label ext4
	peer_down
}
for ((rep = 1; rep <= REPS; rep++)); do
	say "rep $rep"
	if ((rep % 2)); then
		on_ustore "$rep"
		on_ext4 "$rep"
	else
		on_ext4 "$rep"
		on_ustore "$rep"
	fi
done
echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min, at the end)" >>"$OUT/machine.txt"
echo
summarize "$OUT" | tee "$OUT/summary.md"
echo
echo "raw results: $OUT"
if ((failures)); then
	say "$failures runs failed"
	exit 1
fi
