#!/usr/bin/env bash
# fsync-vs-peers.sh — the fsync workloads of issue 6 on ustore and on ext4,
# xfs and btrfs, on the same disk, in one run; ratio tables and plots.
#
# Usage: sudo bench/fsync-vs-peers.sh                    (as root: loop devices, mkfs, mount)
#        sudo QUICK=1 bench/fsync-vs-peers.sh            (small sizes: ≈ 6 min on 2 cores; full sizes ≈ 20 min)
#        bench/fsync-vs-peers.sh --summarize bench/out/fsync-vs-peers-YYYYmmdd-HHMMSS
#                                                        (the tables again; plots too with PLOTS=DIR)
#
# Each workload is `ustore bench <workload>` (bench/fsyncbench): the same Go
# code runs on a ustore server (--socket, through the client) and on a kernel
# filesystem's directory (--dir, through the system calls). Every case gets a
# fresh filesystem:
#   ustore   `ustore mkfs --nodesize N` on a fully written image file, then
#            `ustore serve --device IMG --metrics-addr 127.0.0.1:0` (the
#            server's counters are scraped into the results)
#   ext4     mkfs.ext4 -F -E nodiscard,lazy_itable_init=0,lazy_journal_init=0
#   xfs      mkfs.xfs -f -K
#   btrfs    mkfs.btrfs -f -K -d single -m single -n 16K|64K, mounted -o ssd
# the peers on `losetup --direct-io=on` over another fully written image file
# (a sparse one doubles the cost of a flush: fdatasync p50 243 µs against
# 104 µs on a fully written one, docs/BENCHMARKS.md "fsync (issue 6)").
# Both image files sit in IMG_DIR on the same disk (never tmpfs).
#
# Workloads and cases (WORKLOADS picks among them):
#   fsync-randwrite  ustore, ext4, xfs, btrfs × 8 and 16 jobs; and fio's own job
#                    on ext4 at 8 jobs (FIO_CHECK=1), to check the Go workload
#                    against fio
#   dir-fsync        ustore and btrfs with 16 KiB and 64 KiB nodes, ext4, xfs
#   csum-fsync       ustore, ext4, xfs, btrfs
#   committed-check  two ustore servers at once (one with
#                    --ablate-committed-lock), modes randrw and fsync, CC_REPS
#                    runs each, and ext4 as the kernel's reference
# It prints ratio tables (ustore over each peer: above 1 is ustore ahead for
# rates, behind for times) with the issue's goals, and writes the raw JSON
# and logs under OUT, and PNG plots (gnuplot) into PLOTS.
#
# Settings (environment variables; QUICK=1 changes the defaults in brackets):
#   IMG_DIR        image files' directory (ustore-data/fsync-bench, on /)
#   IMG_SIZE       each image file (8G [4G])
#   WORKLOADS      fsync-randwrite,dir-fsync,csum-fsync,committed-check
#   PEERS          ext4,xfs,btrfs (none: ustore alone)
#   RW_JOBS        8,16          RW_FILE_SIZE  32M          RW_DURATION  30s [10s]
#   DIR_FILES      1000000 [100000]
#   CSUM_LARGE     2G [256M]     CSUM_SMALL    4M           CSUM_DURATION 10s [10s]
#   CC_FILE_SIZE   512M [64M]    CC_DURATION   10s [5s]     CC_MODES     randrw,fsync
#   CC_REPS        3 [2]         committed-check runs per mode and server, alternating which goes first
#   REPS           1             repetitions of every case (the summary takes medians)
#   SERVE_FLAGS    ""            more flags for every `ustore serve` (an ablation, say)
#   WRITE_BEHIND   0             writes each ustore file keeps in flight (`ustore bench
#                                --write-behind`: the client's write-behind, a file's
#                                writes sent back to back and its fsync after their
#                                replies); 0: each write waits for its reply, as fio's
#                                pwrite does on the peers
#   USTORE_RUNS    1             0: the peers only (to redo a peer's cases into another OUT)
#   FIO_CHECK      1             fio's fsync-randwrite job on ext4 at 8 jobs
#   OUT            bench/out/fsync-vs-peers-<date>
#   PLOTS          docs/img [OUT/img]
#   USTORE         run this ustore binary instead of building bin/ustore
#
# Needs: root, bash, go, python3, util-linux (losetup); xfsprogs, btrfs-progs,
# e2fsprogs, fio and gnuplot-nox are installed with apt-get when missing.
set -euo pipefail

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; }
die() { echo "fsync-vs-peers: $*" >&2; exit 2; }
say() { echo "fsync-vs-peers: $*" >&2; }

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

summarize_only=""
case ${1:-} in
-h | --help) usage; exit 0 ;;
--summarize) summarize_only=${2:?--summarize needs a directory} ;;
"") ;;
*) usage >&2; die "unknown argument: $1" ;;
esac

QUICK=${QUICK:-0}
plots_given=${PLOTS:-}
q() { if ((QUICK)); then echo "$2"; else echo "$1"; fi; }
IMG_DIR=${IMG_DIR:-ustore-data/fsync-bench}
IMG_SIZE=${IMG_SIZE:-$(q 8G 4G)}
WORKLOADS=${WORKLOADS:-fsync-randwrite,dir-fsync,csum-fsync,committed-check}
PEERS=${PEERS:-ext4,xfs,btrfs}
RW_JOBS=${RW_JOBS:-8,16}
RW_FILE_SIZE=${RW_FILE_SIZE:-32M}
RW_DURATION=${RW_DURATION:-$(q 30s 10s)}
DIR_FILES=${DIR_FILES:-$(q 1000000 100000)}
CSUM_LARGE=${CSUM_LARGE:-$(q 2G 256M)}
CSUM_SMALL=${CSUM_SMALL:-4M}
CSUM_DURATION=${CSUM_DURATION:-10s}
CC_FILE_SIZE=${CC_FILE_SIZE:-$(q 512M 64M)}
CC_DURATION=${CC_DURATION:-$(q 10s 5s)}
CC_MODES=${CC_MODES:-randrw,fsync}
CC_REPS=${CC_REPS:-$(q 3 2)}
REPS=${REPS:-1}
FIO_CHECK=${FIO_CHECK:-1}
OUT=${OUT:-bench/out/fsync-vs-peers-$(date -u +%Y%m%d-%H%M%S)}
PLOTS=${PLOTS:-$(q docs/img "$OUT/img")}
USTORE=${USTORE:-}
SERVE_FLAGS=${SERVE_FLAGS:-}
WRITE_BEHIND=${WRITE_BEHIND:-0}
USTORE_RUNS=${USTORE_RUNS:-1}
[[ $PEERS == none ]] && PEERS=""

# summarize DIR: medians over repetitions, ratio tables, goals; plots.
summarize() {
	python3 - "$1" "${2:-}" <<'PY'
import glob, json, os, re, statistics, subprocess, sys

out, plots = sys.argv[1], sys.argv[2]
params = dict(l.rstrip("\n").split("=", 1) for l in open(os.path.join(out, "params.env")) if "=" in l)

def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None

def runs(workload, case):
    """Every repetition's report of one case."""
    return [r for p in sorted(glob.glob(os.path.join(out, "rep*", f"{workload}--{case}.json"))) if (r := load(p))]

def med(v):
    v = [x for x in v if x is not None]
    return statistics.median(v) if v else None

def f0(x): return "-" if x is None else f"{x:,.0f}"
def f1(x): return "-" if x is None else f"{x:,.1f}"
def f2(x): return "-" if x is None else f"{x:.2f}"
def ratio(a, b): return None if a is None or not b else a / b

# Store counters that say nothing about how fsyncs went.
NOISE = {"store_writeback_blocks", "store_writeback_errors", "store_extents_written", "store_csum_errors",
         "store_dirty_bytes", "store_inodes"}

def counters_line(c):
    """The server counters that say how fsyncs went, compactly."""
    if not c:
        return ""
    keep = []
    for k, v in sorted(c.items()):
        name = k.removeprefix("ustore_")
        if name.startswith("store_") and name not in NOISE:
            keep.append(f"{name.removeprefix('store_')} {v:+.0f}")
        elif name == "commit_duration_seconds_count":
            keep.append(f"transaction commits {v:.0f}")
        elif name == "log_sync_batch_size_count" and v:
            s = c.get("ustore_log_sync_batch_size_sum", 0)
            keep.append(f"log sync batch mean {s / v:.1f}")
    return ", ".join(keep)

peers = [p for p in params["PEERS"].split(",") if p]
workloads = params["WORKLOADS"].split(",")
reps = len(glob.glob(os.path.join(out, "rep*")))
print(f"fsync workloads, ustore vs {', '.join(peers)}; {reps} repetition(s), medians; "
      f"{'QUICK sizes' if params.get('QUICK') == '1' else 'full sizes'}")
print(open(os.path.join(out, "machine.txt")).read().rstrip())
dat = {}  # plot name → rows

def gnuplot(name, script):
    if not plots:
        return
    os.makedirs(plots, exist_ok=True)
    png = os.path.join(plots, f"fsync-{name}.png")
    gp = os.path.join(out, f"plot-{name}.gp")
    with open(gp, "w") as f:
        f.write(f"set terminal pngcairo size 900,520 font 'sans,10'\nset output '{png}'\n")
        f.write("set style data histograms\nset style histogram clustered gap 1\nset style fill solid 0.85 border -1\n")
        f.write("set grid ytics\nset key top left\nset boxwidth 0.9\n")
        if "logscale" not in script:
            f.write("set yrange [0:*]\n")  # bars start at zero
        f.write(script)
    r = subprocess.run(["gnuplot", gp], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"gnuplot {gp}: {r.stderr.strip()}", file=sys.stderr)
    else:
        print(f"\nplot: {png}")

def bars(name, header, rows):
    """The plot clause of a clustered bar chart: one bar series per
    column that has a value (gnuplot refuses a series with none)."""
    cols = [i for i in range(1, len(header)) if any(r[i] is not None for r in rows)]
    dat = write_dat(name, header, rows)
    return ", ".join(f"'{dat}' using {i + 1}" + (":xtic(1)" if k == 0 else "") + f" title columnheader({i + 1})"
                     for k, i in enumerate(cols))

def write_dat(name, header, rows):
    path = os.path.join(out, f"plot-{name}.dat")
    with open(path, "w") as f:
        f.write(" ".join(f'"{h}"' for h in header) + "\n")
        for r in rows:
            f.write(" ".join(f'"{x}"' if isinstance(x, str) else ("NaN" if x is None else f"{x:g}") for x in r) + "\n")
    return path

# --- fsync-randwrite -------------------------------------------------------
if "fsync-randwrite" in workloads:
    jobs = [int(j) for j in params["RW_JOBS"].split(",")]
    systems = ["ustore"] + peers
    fig = {}  # (system, jobs) → (iops, p50, p99)
    for s in systems:
        reports = runs("fsync-randwrite", s)
        for j in jobs:
            rs = [r for rep in reports for r in rep["results"] if r["jobs"] == j]
            if rs:
                fig[(s, j)] = (med([r["write_iops"] for r in rs]), med([r["fsync"]["p50_us"] for r in rs]),
                               med([r["fsync"]["p99_us"] for r in rs]), rs[0].get("counters"))
    print(f"\n## fsync-randwrite: 4 KiB random writes, fsync every 4, one {params['RW_FILE_SIZE']} file per job, "
          f"{params['RW_DURATION']}\n")
    print("| fs | jobs | write IOPS | fsync p50 µs | fsync p99 µs | ustore/fs IOPS | goal |")
    print("|---|--:|--:|--:|--:|--:|---|")
    for j in jobs:
        u = fig.get(("ustore", j))
        for s in systems:
            f = fig.get((s, j))
            if not f:
                continue
            rr = ratio(u[0] if u else None, f[0]) if s != "ustore" else None
            goal = ""
            if rr is not None:
                want = 1.5 if s == "btrfs" else 1.0
                goal = f"≥ {want}×: {'met' if rr >= want else 'NOT met'}"
            print(f"| {s} | {j} | {f0(f[0])} | {f0(f[1])} | {f0(f[2])} | {f2(rr) if s != 'ustore' else ''} | {goal} |")
    fio = [load(p) for p in sorted(glob.glob(os.path.join(out, "rep*", "fio-randwrite--ext4.json")))]
    fio = [x for x in fio if x and x.get("jobs")]
    if fio:
        iops = med([x["jobs"][0]["write"]["iops"] for x in fio])
        p50 = med([x["jobs"][0].get("sync", {}).get("lat_ns", {}).get("percentile", {}).get("50.000000") for x in fio])
        go = fig.get(("ext4", 8))
        print(f"\nfio's own job on ext4, 8 jobs (the Go workload's check): {f0(iops)} write IOPS, fsync p50 "
              f"{f0(p50 / 1e3 if p50 else None)} µs; `ustore bench fsync-randwrite --dir` on ext4: "
              f"{f0(go[0] if go else None)} IOPS ({f2(ratio(go[0] if go else None, iops))}× fio's)")
    for j in jobs:
        if ("ustore", j) in fig and fig[("ustore", j)][3]:
            print(f"\nustore's counters, {j} jobs: {counters_line(fig[('ustore', j)][3])}")
    plot = bars("randwrite-iops", ["jobs"] + systems, [[f"{j} jobs"] + [fig.get((s, j), (None,))[0] for s in systems] for j in jobs])
    gnuplot("randwrite-iops", f"set title 'fsync-randwrite: write IOPS (fsync every 4 writes)'\nset ylabel 'write IOPS'\nplot {plot}\n")
    rows = []
    for s in systems:
        for j in jobs:
            f = fig.get((s, j))
            rows.append([f"{s} {j}j", f[1] if f else None, f[2] if f else None])
    plot = bars("randwrite-latency", ["case", "fsync p50", "fsync p99"], rows)
    gnuplot("randwrite-latency", "set title 'fsync-randwrite: fsync latency'\nset ylabel 'µs (log)'\nset logscale y\n"
            f"set xtics rotate by -30\nplot {plot}\n")

# --- dir-fsync ---------------------------------------------------------------
if "dir-fsync" in workloads:
    variants = ["ustore-16k", "ustore-64k"] + [p for v in peers for p in ((["btrfs-16k", "btrfs-64k"]) if v == "btrfs" else [v])]
    keys = ["create_ms", "fsync_after_create_ms", "sync_ms", "delete_ms", "fsync_after_delete_ms"]
    fig = {}
    for v in variants:
        rs = [rep["results"] for rep in runs("dir-fsync", v)]
        if rs:
            fig[v] = {k: med([r[k] for r in rs]) for k in keys}
            fig[v]["counters"] = rs[0].get("counters") or {}
    print(f"\n## dir-fsync: {int(params['DIR_FILES']):,} empty files in one directory, fsync it, sync, delete "
          f"1000, fsync it (ms)\n")
    print("| fs | create | dir fsync after create | sync | delete 1000 | dir fsync after delete |")
    print("|---|--:|--:|--:|--:|--:|")
    for v in variants:
        if v in fig:
            x = fig[v]
            print(f"| {v} | {f0(x['create_ms'])} | {f1(x['fsync_after_create_ms'])} | {f1(x['sync_ms'])} | "
                  f"{f1(x['delete_ms'])} | {f1(x['fsync_after_delete_ms'])} |")
    print("\nustore over each peer (times: below 1 is ustore faster); goal: both fsyncs faster than btrfs's\n")
    print("| ustore | peer | fsync after create | fsync after delete | goal |")
    print("|---|---|--:|--:|---|")
    for u in ("ustore-16k", "ustore-64k"):
        for v in variants:
            if v.startswith("ustore") or u not in fig or v not in fig:
                continue
            if v.startswith("btrfs") and v[-3:] != u[-3:]:
                continue
            a = ratio(fig[u]["fsync_after_create_ms"], fig[v]["fsync_after_create_ms"])
            b = ratio(fig[u]["fsync_after_delete_ms"], fig[v]["fsync_after_delete_ms"])
            goal = ("met" if a is not None and b is not None and a < 1 and b < 1 else "NOT met") if v.startswith("btrfs") else ""
            print(f"| {u} | {v} | {f2(a)} | {f2(b)} | {goal} |")
    for u in ("ustore-16k", "ustore-64k"):
        c = fig.get(u, {}).get("counters", {})
        for step in ("fsync_after_create", "fsync_after_delete"):
            if c.get(step):
                print(f"\n{u} counters, {step.replace('_', ' ')}: {counters_line(c[step])}")
    rows = [[v, fig[v]["fsync_after_create_ms"], fig[v]["fsync_after_delete_ms"]] for v in variants if v in fig]
    plot = bars("dir", ["fs", "dir fsync after create", "dir fsync after delete"], rows)
    gnuplot("dir", "set title 'dir-fsync: directory fsync after creates and after 1000 deletes'\nset ylabel 'ms (log)'\n"
            f"set logscale y\nplot {plot}\n")

# --- csum-fsync --------------------------------------------------------------
if "csum-fsync" in workloads:
    systems = ["ustore"] + peers
    fig = {}
    for s in systems:
        rs = [rep["results"] for rep in runs("csum-fsync", s)]
        if rs:
            fig[s] = {
                "large_rps": med([r["large"]["requests_per_sec"] for r in rs]),
                "small_rps": med([r["small"]["requests_per_sec"] for r in rs]),
                "large_p50": med([r["large"]["fsync"]["p50_us"] for r in rs]),
                "small_p50": med([r["small"]["fsync"]["p50_us"] for r in rs]),
                "large_mean": med([r["large"]["fsync"]["mean_us"] for r in rs]),
                "small_mean": med([r["small"]["fsync"]["mean_us"] for r in rs]),
                "counters": (rs[0]["large"].get("counters"), rs[0]["small"].get("counters")),
            }
    print(f"\n## csum-fsync: one thread, 4 KiB random writes to 2 files, fsync of each every 100; "
          f"{params['CSUM_LARGE']} vs {params['CSUM_SMALL']} files, {params['CSUM_DURATION']} each\n")
    print("| fs | large req/s | small req/s | fsync p50 µs large | small | large/small p50 | mean | goal ≤ 1.2 | ustore/fs req/s (large) |")
    print("|---|--:|--:|--:|--:|--:|--:|---|--:|")
    for s in systems:
        if s not in fig:
            continue
        x = fig[s]
        rp, rm = ratio(x["large_p50"], x["small_p50"]), ratio(x["large_mean"], x["small_mean"])
        goal = "-" if rp is None else ("met" if rp <= 1.2 and (rm or 0) <= 1.2 else "NOT met")
        rr = "" if s == "ustore" else f2(ratio(fig.get("ustore", {}).get("large_rps"), x["large_rps"]))
        print(f"| {s} | {f0(x['large_rps'])} | {f0(x['small_rps'])} | {f0(x['large_p50'])} | {f0(x['small_p50'])} | "
              f"{f2(rp)} | {f2(rm)} | {goal} | {rr} |")
    if fig.get("ustore", {}).get("counters"):
        lc, sc = fig["ustore"]["counters"]
        print(f"\nustore's counters, large files: {counters_line(lc)}\nustore's counters, small files: {counters_line(sc)}")
    rows = [[s, fig[s]["large_p50"], fig[s]["small_p50"]] for s in systems if s in fig]
    plot = bars("csum", ["fs", f"fsync p50, {params['CSUM_LARGE']} files", f"fsync p50, {params['CSUM_SMALL']} files"], rows)
    gnuplot("csum", f"set title 'csum-fsync: fsync latency, large vs small files'\nset ylabel 'µs'\nplot {plot}\n")

# --- committed-check ---------------------------------------------------------
if "committed-check" in workloads:
    modes = params["CC_MODES"].split(",")
    rs = [r for rep in runs("committed-check", "ustore") for r in rep["results"]]
    ext4 = [r for rep in runs("committed-check", "ext4") for r in rep["results"]]
    print(f"\n## committed-check: 10 clients × 10 in flight on one {params['CC_FILE_SIZE']} file, "
          f"{params['CC_DURATION']} per run\n")
    print("| mode | lock-free ops/s | locked (ablation) ops/s | lock-free/locked | ext4 ops/s | ustore/ext4 |")
    print("|---|--:|--:|--:|--:|--:|")
    rows = []
    for m in modes:
        free = med([r["ops_per_sec"] for r in rs if r["rw"] == m and r.get("label") == "lock-free"])
        locked = med([r["ops_per_sec"] for r in rs if r["rw"] == m and r.get("label") == "locked"])
        e = med([r["ops_per_sec"] for r in ext4 if r["rw"] == m])
        print(f"| {m} | {f0(free)} | {f0(locked)} | {f2(ratio(free, locked))} | {f0(e)} | {f2(ratio(free, e))} |")
        rows.append([m, free, locked, e])
    plot = bars("committed", ["mode", "ustore lock-free", "ustore locked", "ext4"], rows)
    gnuplot("committed", f"set title 'committed-check: 10 clients × 10 in flight'\nset ylabel 'ops/s'\nplot {plot}\n")
PY
}

if [[ -n $summarize_only ]]; then
	summarize "$summarize_only" "$plots_given"
	exit 0
fi

((EUID == 0)) || die "run as root: it makes loop devices and filesystems and mounts them"
[[ $REPS =~ ^[1-9][0-9]*$ ]] || die "REPS must be a positive integer, not '$REPS'"

need=()
for tool in mkfs.ext4:e2fsprogs mkfs.xfs:xfsprogs mkfs.btrfs:btrfs-progs fio:fio gnuplot:gnuplot-nox losetup:util-linux; do
	command -v "${tool%%:*}" >/dev/null 2>&1 || need+=("${tool#*:}")
done
if ((${#need[@]})); then
	say "installing ${need[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
command -v python3 >/dev/null 2>&1 || die "python3 is needed to read the JSON results"

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
{
	for v in QUICK IMG_DIR IMG_SIZE WORKLOADS PEERS RW_JOBS RW_FILE_SIZE RW_DURATION DIR_FILES CSUM_LARGE CSUM_SMALL \
		CSUM_DURATION CC_FILE_SIZE CC_DURATION CC_MODES CC_REPS REPS FIO_CHECK SERVE_FLAGS WRITE_BEHIND; do
		echo "$v=${!v}"
	done
} >"$OUT/params.env"

bytes_of() { numfmt --from=iec "${1%B}"; }
img_bytes=$(bytes_of "$IMG_SIZE")

# layout, cleanup, drop_caches, peer_up, peer_down, serve, unserve.
source "$repo/bench/peers.sh"

peer_img=$IMG_DIR/peer.img
ustore_img=$IMG_DIR/ustore.img
ablated_img=$IMG_DIR/ustore-ablated.img
layout "$peer_img" "$img_bytes"
layout "$ustore_img" "$img_bytes"
if [[ ,$WORKLOADS, == *,committed-check,* ]] && ((USTORE_RUNS)); then
	layout "$ablated_img" "$img_bytes"
fi

mnt=$IMG_DIR/mnt
mkdir -p "$mnt"
trap cleanup EXIT
trap 'exit 130' INT TERM

{
	disk=$(lsblk -no PKNAME "$(findmnt -n -o SOURCE -T "$IMG_DIR")" 2>/dev/null | head -n 1)
	[[ -n $disk ]] || disk=$(basename "$(findmnt -n -o SOURCE -T "$IMG_DIR")")
	echo "date:    $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
	echo "host:    $(uname -srm); $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(free -g | awk '/^Mem:/ { print $2 }') GiB RAM"
	echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min, at start)"
	echo "disk:    /dev/$disk: $(lsblk -dn -o SIZE,ROTA,MODEL "/dev/$disk" 2>/dev/null | xargs), write cache '$(cat "/sys/block/$disk/queue/write_cache" 2>/dev/null)'; images in $IMG_DIR ($(findmnt -n -o FSTYPE,OPTIONS -T "$IMG_DIR")), $IMG_SIZE each, fully written"
	echo "peers:   loop --direct-io=on; $(mkfs.ext4 -V 2>&1 | head -n 1); $(mkfs.xfs -V 2>&1); $(mkfs.btrfs --version 2>&1 | head -n 1)"
	echo "ustore:  $(if [[ -n $USTORE ]]; then echo "$ustore (USTORE)"; else echo "$(git rev-parse --short HEAD) + $(git status --porcelain | wc -l) uncommitted paths"; fi); $(go version | cut -d' ' -f3)"
	cmdline="bench/fsync-vs-peers.sh"
	[[ -n $SERVE_FLAGS ]] && cmdline="SERVE_FLAGS=\"$SERVE_FLAGS\" $cmdline"
	((WRITE_BEHIND)) && cmdline="WRITE_BEHIND=$WRITE_BEHIND $cmdline"
	((QUICK)) && cmdline="QUICK=1 $cmdline"
	echo "command: $cmdline"
} >"$OUT/machine.txt"
cat "$OUT/machine.txt" >&2

failures=0
# bench OUTFILE ARGS...: one `ustore bench` run, its JSON kept.
bench() {
	local json=$1 rc=0
	shift
	say "  $*"
	timeout 3600 "$ustore" bench "$@" --json --keep --progress never >"$json" 2>"${json%.json}.stderr" || rc=$?
	if ((rc != 0)); then
		failures=$((failures + 1))
		say "FAILED (rc $rc): ustore bench $*"
		sed 's/^/    /' "${json%.json}.stderr" >&2
		rm -f "$json"
	fi
}
# on_peer FS NODESIZE JSON WORKLOAD ARGS...: the workload on a fresh FS
# (with $inodes inodes at least, when set).
on_peer() {
	local fs=$1 ns=$2 json=$3
	shift 3
	peer_up "$fs" "$ns" "${inodes:-}"
	bench "$json" "$@" --dir "$mnt" --label "$fs"
	peer_down
}
# on_ustore NODESIZE JSON WORKLOAD ARGS...: the workload on a fresh ustore.
on_ustore() {
	local ns=$1 json=$2
	shift 2
	NODESIZE=$ns serve "$ustore_img" "${json%.json}.serve.log"
	local wb=()
	((WRITE_BEHIND)) && wb=(--write-behind "$WRITE_BEHIND")
	bench "$json" "$@" --socket "$sock" --metrics "$metrics" --label "ustore" "${wb[@]}"
	unserve
}

has() { [[ ,$WORKLOADS, == *,$1,* ]]; }
IFS=, read -r -a peer_list <<<"$PEERS"
for ((rep = 1; rep <= REPS; rep++)); do
	dir=$OUT/rep$rep
	mkdir -p "$dir"
	if has fsync-randwrite; then
		say "rep $rep: fsync-randwrite"
		for j in ${RW_JOBS//,/ }; do
			args=(fsync-randwrite --jobs "$j" --file-size "$RW_FILE_SIZE" --duration "$RW_DURATION")
			((USTORE_RUNS)) && on_ustore 16k "$dir/fsync-randwrite--ustore-j$j.json" "${args[@]}"
			for fs in "${peer_list[@]}"; do
				on_peer "$fs" 16K "$dir/fsync-randwrite--$fs-j$j.json" "${args[@]}"
			done
		done
		# One report per system: the job counts together.
		for s in ustore "${peer_list[@]}"; do
			python3 - "$dir" "$s" <<'PY'
import glob, json, os, sys
d, s = sys.argv[1], sys.argv[2]
parts = [json.load(open(p)) for p in sorted(glob.glob(os.path.join(d, f"fsync-randwrite--{s}-j*.json")))]
if parts:
    parts[0]["results"] = [r for p in parts for r in p["results"]]
    json.dump(parts[0], open(os.path.join(d, f"fsync-randwrite--{s}.json"), "w"), indent=2)
PY
		done
		if ((FIO_CHECK)) && [[ ,$PEERS, == *,ext4,* ]]; then
			say "  fio's job on ext4, 8 jobs"
			peer_up ext4
			fio --name=fio-rand-write --directory="$mnt" --rw=randwrite --fsync=4 --fallocate=none --group_reporting=1 \
				--direct=0 --bs=4k --ioengine=sync --size="$RW_FILE_SIZE" --numjobs=8 --runtime="$RW_DURATION" \
				--time_based --output-format=json >"$dir/fio-randwrite--ext4.json" 2>"$dir/fio-randwrite--ext4.stderr" ||
				{ failures=$((failures + 1)); say "FAILED: fio"; }
			peer_down
		fi
	fi
	if has dir-fsync; then
		say "rep $rep: dir-fsync"
		args=(dir-fsync --files "$DIR_FILES")
		if ((USTORE_RUNS)); then
			for ns in 16k 64k; do
				on_ustore "$ns" "$dir/dir-fsync--ustore-$ns.json" "${args[@]}"
			done
		fi
		inodes=$((DIR_FILES + 100000))
		for fs in "${peer_list[@]}"; do
			if [[ $fs == btrfs ]]; then
				on_peer btrfs 16K "$dir/dir-fsync--btrfs-16k.json" "${args[@]}"
				on_peer btrfs 64K "$dir/dir-fsync--btrfs-64k.json" "${args[@]}"
			else
				on_peer "$fs" 16K "$dir/dir-fsync--$fs.json" "${args[@]}"
			fi
		done
		inodes=""
	fi
	if has csum-fsync; then
		say "rep $rep: csum-fsync"
		args=(csum-fsync --large-size "$CSUM_LARGE" --small-size "$CSUM_SMALL" --duration "$CSUM_DURATION")
		((USTORE_RUNS)) && on_ustore 16k "$dir/csum-fsync--ustore.json" "${args[@]}"
		for fs in "${peer_list[@]}"; do
			on_peer "$fs" 16K "$dir/csum-fsync--$fs.json" "${args[@]}"
		done
	fi
	if has committed-check; then
		say "rep $rep: committed-check"
		args=(committed-check --file-size "$CC_FILE_SIZE" --duration "$CC_DURATION" --rw "$CC_MODES" --reps "$CC_REPS")
		if ((USTORE_RUNS)); then
			serve "$ustore_img" "$dir/committed-check--ustore.serve.log"
			free_sock=$sock free_metrics=$metrics
			serve "$ablated_img" "$dir/committed-check--ustore-ablated.serve.log" --ablate-committed-lock
			bench "$dir/committed-check--ustore.json" "${args[@]}" --socket "$free_sock" --metrics "$free_metrics" \
				--ablated-socket "$sock" --ablated-metrics "$metrics"
			unserve
		fi
		if [[ ,$PEERS, == *,ext4,* ]]; then
			on_peer ext4 16K "$dir/committed-check--ext4.json" "${args[@]}"
		fi
	fi
done

echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min, at the end)" >>"$OUT/machine.txt"
echo
summarize "$OUT" "$PLOTS" | tee "$OUT/summary.md"
echo
echo "raw results: $OUT"
if ((failures)); then
	say "$failures runs failed"
	exit 1
fi
