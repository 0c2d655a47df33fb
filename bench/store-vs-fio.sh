#!/usr/bin/env bash
# store-vs-fio.sh — ustore's filesystem (store/) against fio on the raw disk.
#
# Usage: bench/store-vs-fio.sh [options]
#        bench/store-vs-fio.sh --summarize bench/out/store-vs-fio-YYYYmmdd-HHMMSS
#
# Each repetition runs, one after the other on the same disk (interleaved, so
# that noise on the shared disk hits both alike; odd repetitions start with
# fio, even ones with ustore), with the page cache dropped before each run:
#   1. fio --ioengine=io_uring --direct=1 --bs=$BS --rw=write --size=$TOTAL
#          --iodepth=$FIO_QD --end_fsync=1     (the flush counts, as ustore's Sync)
#   2. fio ... --rw=read
#   3. ustore bench store --workload seqwrite,seqread --total $TOTAL --bs $BS
#          (seqwrite: buffered writes + Sync; seqread: after a remount, so
#          from the device)
#   4. ustore bench store --workload randwrite --file-size $RAND_FILE_SIZE
#          --duration $RAND_DURATION   (unless --no-randwrite)
# Each side reads right after writing what it reads, so that a cache below
# the VM (the host's), if any, favours neither.
# fio runs on its own file ($FIO_FILE), ustore formats its own ($FILE); both
# files are laid out (written in full, never sparse) before the first run:
# on this VM a sparse file roughly doubles the cost of a flush. It prints the
# medians over repetitions as one table (MB/s, ustore/fio, the 0.80 goal),
# the randwrite figures, and the disk's own count of bytes moved per run
# (/proc/diskstats), and keeps the raw JSON, the machine description and the
# summary under bench/out/ (git-ignored).
#
# MB are 10^6 bytes. fio's figure is its bw_bytes (its runtime includes the
# end_fsync); ustore's counts from the first write to the end of Sync.
#
# Options (each also settable by the environment variable in capitals):
#   --file PATH         FILE            ustore's device file   (ustore-data/bench-store.img)
#   --size N            SIZE            its size               (6G)
#   --fio-file PATH     FIO_FILE        fio's file             (ustore-data/bench-fio.img)
#   --total N           TOTAL           bytes written and read (4G)
#   --bs N              BS              request size           (1M)
#   --fio-qd N          FIO_QD          fio's iodepth          (1: one request at a time, as
#                                                               ustore's caller issues them)
#   --dirty N           DIRTY           ustore's dirty budget  (0: the store's default, 256M)
#   --rand-file-size N  RAND_FILE_SIZE  randwrite file         (1G)
#   --rand-duration D   RAND_DURATION   randwrite time         (10s)
#   --no-randwrite                      skip randwrite (RANDWRITE=0)
#   --reps N            REPS            repetitions            (3)
#   --out DIR           OUT             results directory      (bench/out/store-vs-fio-<date>)
#   --bin-dir DIR       BIN_DIR         where ustore is built  (bin)
#   --ustore PATH       USTORE          run this ustore binary instead of building one
#   --summarize DIR     only print the summary of an earlier results directory
#   -h, --help          this text
#
# Needs: bash, go, python3; fio is installed with apt-get when missing.
# Dropping the page cache needs root (skipped, and said so, without).
# Takes about REPS × (3 × TOTAL at ~1 GB/s + RAND_DURATION + 10 s), plus the
# first layout of both files: ≈ 2–3 min with the defaults.
set -euo pipefail

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; }
die() { echo "store-vs-fio: $*" >&2; exit 2; }

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

FILE=${FILE:-ustore-data/bench-store.img}
SIZE=${SIZE:-6G}
FIO_FILE=${FIO_FILE:-ustore-data/bench-fio.img}
TOTAL=${TOTAL:-4G}
BS=${BS:-1M}
FIO_QD=${FIO_QD:-1}
DIRTY=${DIRTY:-0}
RAND_FILE_SIZE=${RAND_FILE_SIZE:-1G}
RAND_DURATION=${RAND_DURATION:-10s}
RANDWRITE=${RANDWRITE:-1}
REPS=${REPS:-3}
OUT=${OUT:-}
BIN_DIR=${BIN_DIR:-bin}
USTORE=${USTORE:-}
summarize_only=""

while (($#)); do
	case $1 in
	--file) FILE=${2:?--file needs a value}; shift 2 ;;
	--size) SIZE=${2:?--size needs a value}; shift 2 ;;
	--fio-file) FIO_FILE=${2:?--fio-file needs a value}; shift 2 ;;
	--total) TOTAL=${2:?--total needs a value}; shift 2 ;;
	--bs) BS=${2:?--bs needs a value}; shift 2 ;;
	--fio-qd) FIO_QD=${2:?--fio-qd needs a value}; shift 2 ;;
	--dirty) DIRTY=${2:?--dirty needs a value}; shift 2 ;;
	--rand-file-size) RAND_FILE_SIZE=${2:?--rand-file-size needs a value}; shift 2 ;;
	--rand-duration) RAND_DURATION=${2:?--rand-duration needs a value}; shift 2 ;;
	--no-randwrite) RANDWRITE=0; shift ;;
	--reps) REPS=${2:?--reps needs a value}; shift 2 ;;
	--out) OUT=${2:?--out needs a value}; shift 2 ;;
	--bin-dir) BIN_DIR=${2:?--bin-dir needs a value}; shift 2 ;;
	--ustore) USTORE=${2:?--ustore needs a value}; shift 2 ;;
	--summarize) summarize_only=${2:?--summarize needs a directory}; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; die "unknown argument: $1" ;;
	esac
done

# summarize DIR: medians over repetitions, the ratio table, randwrite.
summarize() {
	python3 - "$1" <<'PY'
import glob, json, math, os, re, statistics, sys

out = sys.argv[1]
params = {}
with open(os.path.join(out, "params.env")) as f:
    for line in f:
        k, _, v = line.strip().partition("=")
        params[k] = v

def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None

def fio_mbps(path):
    d = load(path)
    if not d or "jobs" not in d:
        return None
    j = d["jobs"][0]
    side = j["write"] if j["write"]["io_bytes"] > 0 else j["read"]
    return {"mbps": side["bw_bytes"] / 1e6, "cpu": (j["usr_cpu"] + j["sys_cpu"]) / 100 * j["job_runtime"] / 1e3}

def ustore(path):
    d = load(path)
    return {r["workload"]: r for r in d} if isinstance(d, list) else {}

reps = sorted(int(m.group(1)) for p in glob.glob(os.path.join(out, "rep*"))
              if (m := re.search(r"rep(\d+)$", p)))
F = {rw: [x for n in reps if (x := fio_mbps(os.path.join(out, f"rep{n}", f"fio-{rw}.json")))] for rw in ("write", "read")}
S = [ustore(os.path.join(out, f"rep{n}", "ustore-seq.json")) for n in reps]
R = [u["randwrite"] for n in reps if "randwrite" in (u := ustore(os.path.join(out, f"rep{n}", "ustore-rand.json")))]

def med(v): return statistics.median(v) if v else math.nan
def rng(v): return f"{min(v):,.0f}–{max(v):,.0f}" if v else "-"
def f0(x): return "-" if math.isnan(x) else f"{x:,.0f}"
def f2(x): return "-" if math.isnan(x) else f"{x:.2f}"

print(f"store vs fio: {params['TOTAL']} in {params['BS']} requests, fio O_DIRECT io_uring iodepth "
      f"{params['FIO_QD']} (write with end_fsync=1), ustore buffered + Sync, dirty budget "
      f"{'default' if params['DIRTY'] in ('0', '') else params['DIRTY']}; median of {len(reps)} repetitions "
      "(min–max); MB = 10^6 bytes")
print()
print("| workload | fio MB/s | ustore MB/s | ustore/fio | goal ≥ 0.80 | extents |")
print("|---|--:|--:|--:|---|--:|")
for w, rw in (("seqwrite", "write"), ("seqread", "read")):
    fv = [x["mbps"] for x in F[rw]]
    uv = [s[w]["mb_per_s"] for s in S if w in s]
    ex = [s[w]["extents_written"] for s in S if w in s]
    r = med(uv) / med(fv) if fv and uv else math.nan
    # Paired ratios: each repetition's ustore over its own fio.
    pairs = [s[w]["mb_per_s"] / f["mbps"] for s, f in zip(S, F[rw]) if w in s]
    verdict = "no data" if math.isnan(r) else ("met" if r >= 0.80 else "NOT MET")
    print(f"| {w} | {f0(med(fv))} ({rng(fv)}) | {f0(med(uv))} ({rng(uv)}) | {f2(r)} "
          f"(per rep {', '.join(f2(p) for p in pairs)}) | {verdict} | {f0(med(ex))} |")
sw = [s["seqwrite"]["sync_seconds"] for s in S if "seqwrite" in s]
if sw:
    print(f"\nseqwrite's final Sync: median {med(sw) * 1e3:.0f} ms of the timed phase")
if R:
    print()
    print(f"randwrite: {R[0]['bs']}-byte buffered overwrites of a {R[0]['file_size'] / 2**30:g} GiB file for "
          f"{params['RAND_DURATION']}, then Sync; median of {len(R)} (min–max)")
    print()
    print("| ops/s | MB/s | final Sync s | extents | ops per extent | blocks written back |")
    print("|--:|--:|--:|--:|--:|--:|")
    ops = [r["iops"] for r in R]
    print(f"| {f0(med(ops))} ({rng(ops)}) | {med([r['mb_per_s'] for r in R]):.1f} | "
          f"{med([r['sync_seconds'] for r in R]):.2f} | {f0(med([r['extents_written'] for r in R]))} | "
          f"{med([r['ops'] / max(r['extents_written'], 1) for r in R]):.2f} | "
          f"{f0(med([r['writeback_blocks'] for r in R]))} |")

# The disk's own count of what each run moved.
tsv = os.path.join(out, "runs.tsv")
if os.path.exists(tsv):
    rows = {}
    with open(tsv) as f:
        cols = f.readline().rstrip("\n").split("\t")
        for line in f:
            c = dict(zip(cols, line.rstrip("\n").split("\t")))
            if c.get("rd_before", "-") == "-":
                continue
            rd = (int(c["rd_after"]) - int(c["rd_before"])) * 512
            wr = (int(c["wr_after"]) - int(c["wr_before"])) * 512
            rows.setdefault(c["run"], []).append((rd, wr, float(c["wall_s"])))
    if rows:
        print()
        print("disk I/O per run (/proc/diskstats, whole disk, median): GB read / GB written / wall s")
        for k, v in rows.items():
            print(f"  {k:14} {med([x[0] for x in v]) / 1e9:6.2f} / {med([x[1] for x in v]) / 1e9:6.2f} / "
                  f"{med([x[2] for x in v]):6.1f}")
PY
}

if [[ -n $summarize_only ]]; then
	summarize "$summarize_only"
	exit 0
fi

[[ $REPS =~ ^[1-9][0-9]*$ ]] || die "REPS must be a positive integer, not '$REPS'"
[[ $FIO_QD =~ ^[1-9][0-9]*$ ]] || die "FIO_QD must be a positive integer, not '$FIO_QD'"
[[ $RAND_DURATION =~ ^[1-9][0-9]*(s|m)$ ]] || die "RAND_DURATION must be Ns or Nm, not '$RAND_DURATION'"

if ! command -v fio >/dev/null 2>&1; then
	echo "store-vs-fio: installing fio" >&2
	sudo=()
	((EUID == 0)) || sudo=(sudo)
	"${sudo[@]}" apt-get update -qq
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq fio >/dev/null
fi
command -v python3 >/dev/null 2>&1 || die "python3 is needed to read the JSON results"

if [[ -n $USTORE ]]; then
	ustore=$USTORE
	[[ -x $ustore ]] || die "--ustore $ustore is not an executable"
else
	mkdir -p "$BIN_DIR"
	ustore="$BIN_DIR/ustore"
	echo "store-vs-fio: building $ustore" >&2
	go build -o "$ustore" ./cmd/ustore
fi

OUT=${OUT:-bench/out/store-vs-fio-$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
cat >"$OUT/params.env" <<EOF
FILE=$FILE
SIZE=$SIZE
FIO_FILE=$FIO_FILE
TOTAL=$TOTAL
BS=$BS
FIO_QD=$FIO_QD
DIRTY=$DIRTY
RAND_FILE_SIZE=$RAND_FILE_SIZE
RAND_DURATION=$RAND_DURATION
RANDWRITE=$RANDWRITE
REPS=$REPS
EOF

bytes_of() {
	python3 -c '
import sys
s = sys.argv[1].strip().lower().removesuffix("b").removesuffix("i")
m = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}.get(s[-1:], 1)
print(int(s[:-1] if m > 1 else s) * m)' "$1"
}

# fio's file, laid out once with sequential O_DIRECT writes (ustore lays
# out its own, in the same way, on its first run).
mkdir -p "$(dirname "$FIO_FILE")" "$(dirname "$FILE")"
total_bytes=$(bytes_of "$TOTAL")
allocated() { local s b; read -r s b < <(stat -c '%s %b' "$1"); echo "$s $((b * 512))"; }
need_layout=1
if [[ -f $FIO_FILE ]]; then
	read -r fsize fblocks < <(allocated "$FIO_FILE")
	((fsize >= total_bytes && fblocks >= total_bytes)) && need_layout=0
fi
if ((need_layout)); then
	echo "store-vs-fio: laying out $FIO_FILE ($TOTAL, sequential O_DIRECT writes)" >&2
	fio --name=layout --filename="$FIO_FILE" --ioengine=psync --direct=1 --bs=1M --rw=write \
		--size="$TOTAL" --end_fsync=1 --output="$OUT/layout-fio.txt" >/dev/null
fi
read -r fsize fblocks < <(allocated "$FIO_FILE")
((fsize >= total_bytes && fblocks >= total_bytes)) || die "$FIO_FILE is still sparse or short: $fsize bytes, $fblocks allocated"
echo "store-vs-fio: laying out $FILE ($SIZE) if needed" >&2
"$ustore" bench store --file "$FILE" --size "$SIZE" --workload seqwrite --total 1M --progress never \
	>"$OUT/layout-ustore.txt"

src=$(df --output=source "$FILE" | tail -n 1)
dev=""
disk=""
if [[ $src == /dev/* && -b $src ]]; then
	dev=$(basename "$(readlink -f "$src")")
	disk=$(lsblk -no PKNAME "/dev/$dev" 2>/dev/null | head -n 1)
	[[ -n $disk ]] || disk=$dev
fi
diskio() { # sectors read, sectors written of the files' device
	if [[ -n $dev ]]; then awk -v d="$dev" '$3 == d { print $6, $10 }' /proc/diskstats; else echo - -; fi
}
can_drop=0
[[ -w /proc/sys/vm/drop_caches ]] && can_drop=1
drop_caches() { ((can_drop)) && { sync; echo 3 >/proc/sys/vm/drop_caches; } || true; }

{
	echo "date:     $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
	echo "host:     $(uname -srm); $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(free -g | awk '/^Mem:/ { print $2 }') GiB RAM"
	echo "load:     $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min, at start)"
	echo "files:    $FILE ($(allocated "$FILE" | awk '{ print $1 " bytes, " $2 " allocated" }')), $FIO_FILE ($(allocated "$FIO_FILE" | awk '{ print $1 " bytes, " $2 " allocated" }')); $(findmnt -n -T "$FILE" -o SOURCE,FSTYPE,OPTIONS)"
	if [[ -n $disk ]]; then
		q=/sys/block/$disk/queue
		echo "disk:     /dev/$disk: $(lsblk -dn -o SIZE,ROTA,TYPE,MODEL "/dev/$disk" | xargs), scheduler $(cat "$q/scheduler"), write cache '$(cat "$q/write_cache")', nr_requests $(cat "$q/nr_requests")"
	fi
	echo "caches:   $( ((can_drop)) && echo "page cache dropped before every run" || echo "NOT dropped (not root)")"
	echo "fio:      $(fio --version)"
	echo "go:       $(go version)"
	echo "ustore:   $(if [[ -n $USTORE ]]; then echo "$ustore (given with --ustore)"; else echo "$(git rev-parse --short HEAD 2>/dev/null || echo '?') + $(git status --porcelain 2>/dev/null | wc -l) uncommitted paths (built into $ustore)"; fi)"
	echo "command:  bench/store-vs-fio.sh  FILE=$FILE SIZE=$SIZE FIO_FILE=$FIO_FILE TOTAL=$TOTAL BS=$BS FIO_QD=$FIO_QD DIRTY=$DIRTY RAND_FILE_SIZE=$RAND_FILE_SIZE RAND_DURATION=$RAND_DURATION RANDWRITE=$RANDWRITE REPS=$REPS"
} >"$OUT/machine.txt"
cat "$OUT/machine.txt"
echo

printf '%s\t' rep run rc wall_s rd_before rd_after wr_before wr_after | sed 's/\t$/\n/' >"$OUT/runs.tsv"
failures=0
# run REP NAME JSON CMD...: one run after dropping the page cache; its output
# in JSON, stderr beside it.
run() {
	local rep=$1 name=$2 json=$3 rc=0 t0 rd0 wr0 rd1 wr1
	shift 3
	drop_caches
	read -r rd0 wr0 < <(diskio)
	t0=$EPOCHREALTIME
	timeout 600 "$@" >"$json" 2>"${json%.json}.stderr" || rc=$?
	read -r rd1 wr1 < <(diskio)
	printf '%s\t%s\t%s\t%.2f\t%s\t%s\t%s\t%s\n' "$rep" "$name" "$rc" \
		"$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { print b - a }')" "$rd0" "$rd1" "$wr0" "$wr1" >>"$OUT/runs.tsv"
	if ((rc != 0)); then
		failures=$((failures + 1))
		echo "store-vs-fio: FAILED (rc $rc): $*" >&2
		sed 's/^/    /' "${json%.json}.stderr" >&2
		rm -f "$json"
	fi
}

fio_run() { # REP RW
	run "$1" "fio-$2" "$OUT/rep$1/fio-$2.json" \
		fio --name="$2" --filename="$FIO_FILE" --ioengine=io_uring --direct=1 --bs="$BS" \
		--iodepth="$FIO_QD" --rw="$2" --size="$TOTAL" --end_fsync=1 --output-format=json
}
ustore_seq() { # REP
	run "$1" ustore-seq "$OUT/rep$1/ustore-seq.json" \
		"$ustore" bench store --file "$FILE" --size "$SIZE" --workload seqwrite,seqread \
		--total "$TOTAL" --bs "$BS" --dirty "$DIRTY" --json --progress never
}

for ((rep = 1; rep <= REPS; rep++)); do
	mkdir -p "$OUT/rep$rep"
	echo "store-vs-fio: rep $rep/$REPS: $( ((rep % 2)) && echo "fio write, fio read, ustore seqwrite+seqread" || echo "ustore seqwrite+seqread, fio write, fio read")$( ((RANDWRITE)) && echo ", ustore randwrite")" >&2
	if ((rep % 2)); then
		fio_run "$rep" write
		fio_run "$rep" read
		ustore_seq "$rep"
	else
		ustore_seq "$rep"
		fio_run "$rep" write
		fio_run "$rep" read
	fi
	if ((RANDWRITE)); then
		run "$rep" ustore-rand "$OUT/rep$rep/ustore-rand.json" \
			"$ustore" bench store --file "$FILE" --size "$SIZE" --workload randwrite \
			--file-size "$RAND_FILE_SIZE" --duration "$RAND_DURATION" --dirty "$DIRTY" --seed "$rep" \
			--json --progress never
	fi
done

echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/machine.txt"
echo
summarize "$OUT" | tee "$OUT/summary.txt"
echo
echo "raw results: $OUT"
if ((failures)); then
	echo "store-vs-fio: $failures runs failed" >&2
	exit 1
fi
